"""The board's transport: ``mmap`` of ``/dev/mem`` (or a UIO device's maps) for the engine top's two
AXI ports, with the async methods ``pezo.driver.engine`` expects (they complete at once; run the
driver with ``asyncio.run``).

* Registers: aligned 32-bit loads and stores (``memoryview.cast("I")``), one AXI4-Lite access each.
* Windows: aligned 64-bit loads and stores in increasing address order (``memoryview.cast("Q")``), so
  each store is one full 64-bit beat and an engine word's last byte is written after its others (the
  map's rule); ``memcpy`` could reorder or split them.
* ``wait_irq``: with a UIO device, a blocking read of its interrupt count (re-armed by writing 1);
  without one the driver polls STATUS.

SLVERR on the board is a bus error the CPU sees (SError/SIGBUS), not a return code: every access
returns OKAY here. The tests run this class on a temporary file standing in for /dev/mem (not the board).
"""

from __future__ import annotations

import mmap
import os
import time

from pezo.golden.regs.spec import RESP_OKAY

PAGE = mmap.PAGESIZE


class MmapBus:
    """``regs_base`` / ``windows_base``: physical (or file) offsets of the AXI4-Lite and AXI4 ports,
    ``windows_size`` bytes of the AXI4 port (``BoardMap``: 8 slots), ``path`` the memory device
    (/dev/mem; a file in the tests), ``uio`` an optional UIO device for the interrupt."""

    def __init__(
        self,
        path: str,
        regs_base: int,
        windows_base: int,
        windows_size: int,
        regs_size: int = 4096,
        uio: str | None = None,
    ):
        for name, value in (("regs_base", regs_base), ("windows_base", windows_base)):
            if not isinstance(value, int) or value < 0 or value % PAGE:
                raise ValueError(f"{name} must be a non-negative multiple of the page size {PAGE}, got {value!r}")
        if not isinstance(windows_size, int) or windows_size <= 0 or windows_size % 8:
            raise ValueError(f"windows_size must be a positive multiple of 8, got {windows_size!r}")
        self.fd = os.open(path, os.O_RDWR | getattr(os, "O_SYNC", 0))
        self.regs_map = mmap.mmap(
            self.fd, regs_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=regs_base
        )
        self.win_map = mmap.mmap(
            self.fd, windows_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=windows_base
        )
        self.regs, self.windows = memoryview(self.regs_map).cast("I"), memoryview(self.win_map).cast("Q")
        self.uio = os.open(uio, os.O_RDWR) if uio else None

    def close(self) -> None:
        self.regs.release()
        self.windows.release()
        self.regs_map.close()
        self.win_map.close()
        os.close(self.fd)
        if self.uio is not None:
            os.close(self.uio)

    @staticmethod
    def now() -> float:
        return time.perf_counter()

    async def read32(self, addr: int) -> tuple[int, int]:
        return int(self.regs[addr >> 2]), RESP_OKAY

    async def write32(self, addr: int, value: int) -> int:
        self.regs[addr >> 2] = value & 0xFFFFFFFF
        return RESP_OKAY

    async def write_burst(self, addr: int, data: bytes) -> int:
        if addr % 8:
            raise ValueError(f"addr must be 8-byte aligned, got {addr:#x}")
        if len(data) % 8:
            raise ValueError(f"data must be whole 64-bit beats (a multiple of 8 bytes), got {len(data)}")
        words = memoryview(data).cast("Q")
        base = addr >> 3
        for i in range(len(words)):
            self.windows[base + i] = words[i]
        return RESP_OKAY

    async def read_burst(self, addr: int, n: int) -> tuple[bytes, int]:
        if addr % 8:
            raise ValueError(f"addr must be 8-byte aligned, got {addr:#x}")
        base, count = addr >> 3, -(-n // 8)
        out = bytearray(8 * count)
        view = memoryview(out).cast("Q")
        for i in range(count):
            view[i] = self.windows[base + i]
        return bytes(out[:n]), RESP_OKAY

    @property
    def irq(self) -> bool:
        """The driver waits on ``wait_irq`` only with a UIO device."""
        return self.uio is not None

    async def wait_irq(self) -> None:
        if self.uio is None:
            raise RuntimeError("wait_irq needs a UIO device (uio=...); the driver polls STATUS without one")
        os.write(self.uio, (1).to_bytes(4, "little"))  # re-arm
        os.read(self.uio, 4)  # blocks until the interrupt
