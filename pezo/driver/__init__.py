"""Host-side driver of the engine top (``golden.regs.engine``): one ZO training loop over a small bus
interface, with transports for simulation (``pezo.sim.board_bus``) and the board (``pezo.driver.mmap_bus``).

Layering: ``pezo.driver`` sits below ``pezo.sim`` and beside ``pezo.hw`` and imports only ``pezo.golden``
(NumPy and the standard library): no Amaranth, no cocotb, so the same module runs on the board's Linux.
"""
