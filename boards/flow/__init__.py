"""The tool flow: YoWASP tool runs, Yosys synthesis, timing, Vivado report parsing, the power proxy, the resource
reports and their comparison table, and the design-space explorer built on them."""
