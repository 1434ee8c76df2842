"""pezo simulation: cocotb testbenches and the one place that builds and runs simulators."""
