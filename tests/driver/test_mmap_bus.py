"""The board transport (``pezo.driver.mmap_bus``) on a temporary file standing in for /dev/mem -- NOT the
board: it checks the access code path (offsets, 32-bit register and 64-bit window accesses, the
driver's byte layouts), not the hardware behind it."""

from __future__ import annotations

import asyncio
import json
import mmap

import numpy as np
import pytest

from pezo.driver.engine import BusError, EngineDriver
from pezo.driver.mmap_bus import MmapBus
from pezo.golden.engine.conv import batch_patches
from pezo.golden.engine.loss import LossConfig
from pezo.golden.engine.nets import net_config
from pezo.golden.engine.network import batch_words
from pezo.golden.regs.engine import ENGINE_MAP_VERSION, KIND_SHIFT, BoardMap
from pezo.golden.regs.stream import HOST_ID

REGS_BASE = 4 * mmap.PAGESIZE  # offsets inside the stand-in file, as physical addresses would be


def _stand_in(tmp_path, bmap: BoardMap):
    """(bus, path, windows_base): a file the size of the register page plus the AXI4 windows of ``bmap``, standing
    in for /dev/mem."""
    windows_base = REGS_BASE + mmap.PAGESIZE
    path = tmp_path / "not-the-board-devmem"
    path.write_bytes(bytes(windows_base + (1 << bmap.addr_width)))
    return MmapBus(str(path), REGS_BASE, windows_base, 1 << bmap.addr_width), path, windows_base


@pytest.fixture
def fake_mem(tmp_path):
    bmap = BoardMap(net_config("digits-mlp", batch=16))
    bus, path, windows_base = _stand_in(tmp_path, bmap)
    yield bmap, bus, path, windows_base
    bus.close()


def test_registers_are_32_bit_words_at_their_offsets(fake_mem):
    bmap, bus, path, _ = fake_mem
    assert asyncio.run(bus.write32(bmap.register("STEPS"), 0x1_2345_6789)) == 0
    assert asyncio.run(bus.read32(bmap.register("STEPS"))) == (0x2345_6789, 0)
    raw = path.read_bytes()
    offset = REGS_BASE + bmap.register("STEPS")
    assert raw[offset : offset + 4] == (0x2345_6789).to_bytes(4, "little")


def test_the_driver_writes_the_maps_layouts_through_the_file(fake_mem):
    bmap, bus, path, windows_base = fake_mem
    cfg = bmap.config
    driver = EngineDriver(bus, bmap)
    rng = np.random.default_rng(3)
    flat = rng.integers(-127, 128, size=cfg.weights)
    asyncio.run(driver.load_weights(flat))
    assert np.array_equal(asyncio.run(driver.read_weights()), flat)
    batch = cfg.array.batch
    x, y = rng.integers(-128, 128, size=(batch, cfg.inputs)), rng.integers(0, cfg.outputs, size=batch)
    assert asyncio.run(driver.write_batch(x, y))
    raw = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    example = windows_base + bmap.x_offset(5)
    assert np.array_equal(raw[example : example + cfg.inputs].astype(np.int8), x[5])
    label = windows_base + bmap.label_offset(7)
    assert int.from_bytes(bytes(raw[label : label + 8]), "little") == y[7]
    # a step record and a logit row placed in the "memory" read back through the driver's decoding
    record = np.array([123456789012, 5, (-3) & (2**64 - 1), 1], dtype="<u8").tobytes()
    asyncio.run(bus.write_burst(bmap.step_offset(70), record))
    got = asyncio.run(driver.read_step(70 - 64))
    assert (got.loss_plus, got.loss_minus, got.g, got.bank) == (123456789012, 5, -3, 1)
    entries = np.zeros((cfg.array.batch, bmap.output_stride, 2), dtype="<i4")
    entries[2, 3] = (-77, -1)
    asyncio.run(bus.write_burst(bmap.logit_offset(1, 1, 0), entries.tobytes()))
    logits, quant = asyncio.run(driver.read_logits(1, passes=(1,)))
    assert logits[0, 2, 3] == -77 and quant[0, 2, 3] == -1 and np.count_nonzero(logits) == 1


def test_a_conv_net_batch_is_written_as_its_patches(tmp_path):
    """digits-cnn: the x window takes layer 0's im2col'd patches (``batch_words``: the sim hosts' function),
    ``x_bytes`` = input_words * cols per example."""
    bmap = BoardMap(net_config("digits-cnn", batch=8))
    cfg = bmap.config
    bus, path, windows_base = _stand_in(tmp_path, bmap)
    rng = np.random.default_rng(4)
    x, y = rng.integers(-128, 128, size=(cfg.array.batch, cfg.inputs)), rng.integers(0, 10, size=cfg.array.batch)
    assert asyncio.run(EngineDriver(bus, bmap).write_batch(x, y))
    bus.close()
    raw = np.frombuffer(path.read_bytes(), dtype=np.uint8).astype(np.int8)
    assert bmap.x_bytes == cfg.input_words * cfg.array.cols == 1024 != cfg.inputs
    example = windows_base + bmap.x_offset(3)
    assert np.array_equal(raw[example : example + bmap.x_bytes], batch_patches(x, cfg.layers[0], cfg.array.cols)[3])
    assert np.array_equal(batch_words(cfg, x), batch_patches(x, cfg.layers[0], cfg.array.cols))


def test_a_file_that_is_no_engine_is_refused_and_bad_arguments_name_the_parameter(fake_mem, tmp_path):
    bmap, bus, _, _ = fake_mem
    with pytest.raises(BusError, match=f"ID 0x0 \\(expected {HOST_ID:#x}\\)"):
        asyncio.run(EngineDriver(bus, bmap).check_identity())
    with pytest.raises(ValueError, match="addr must be 8-byte aligned"):
        asyncio.run(bus.write_burst(4, bytes(8)))
    with pytest.raises(ValueError, match="data must be whole 64-bit beats"):
        asyncio.run(bus.write_burst(0, bytes(5)))
    with pytest.raises(ValueError, match="regs_base must be a non-negative multiple of the page size"):
        MmapBus(str(tmp_path / "x"), 100, 0, 8)
    with pytest.raises(ValueError, match="weights must hold"):
        asyncio.run(EngineDriver(bus, bmap).load_weights([1, 2, 3]))
    assert not bus.irq


def test_a_device_with_other_layer_kinds_is_refused_with_one_line(tmp_path):
    """SHAPE bits 26..31 (the conv layers): a dense design of digits-cnn's shape behind a digits-cnn config.json
    (every other identity register equal) is refused, naming both kinds."""
    bmap = BoardMap(net_config("digits-cnn", batch=8))
    bus, _, _ = _stand_in(tmp_path, bmap)
    dense_shape = bmap.shape_word() & ((1 << KIND_SHIFT) - 1)
    identity = {"ID": HOST_ID, "VERSION": ENGINE_MAP_VERSION, "SHAPE": dense_shape, "BATCH": bmap.batch_word()}
    for name, value in identity.items():
        asyncio.run(bus.write32(bmap.register(name), value))
    with pytest.raises(BusError, match="layer kinds differ .* says no conv layer, the config .* has conv layers 0, 1"):
        asyncio.run(EngineDriver(bus, bmap).check_identity())
    asyncio.run(bus.write32(bmap.register("SHAPE"), bmap.shape_word()))
    asyncio.run(EngineDriver(bus, bmap).check_identity())
    bus.close()


def test_a_split_the_net_does_not_allow_is_refused_before_any_register_write(tmp_path):
    """The engine runs a SPLIT above L as full ZO and does not know its layer kinds, so the driver refuses, before
    writing OP: a split outside 0..L, and a conv layer in the backprop tail (digits-cnn: C in 2..4)."""
    for net, split, message in (
        ("digits-mlp", 5, r"split must be one of full-zo, cls2, cls1, full-bp or a layer index 0\.\.3, got 5"),
        ("digits-cnn", 1, r"split 1 puts layer 1 .* split must be one of full-zo, cls2, cls1 or a layer index 2\.\.4"),
    ):
        bmap = BoardMap(net_config(net, batch=8, backprop=True))
        bus, _, _ = _stand_in(tmp_path, bmap)
        asyncio.run(bus.write32(bmap.register("OP"), 0xA5))
        with pytest.raises(ValueError, match=message):
            asyncio.run(EngineDriver(bus, bmap).start("train", loss=LossConfig(split=split)))
        assert asyncio.run(bus.read32(bmap.register("OP"))) == (0xA5, 0)
        bus.close()


@pytest.mark.parametrize(
    "split,message",
    [
        ("full-bp", "--split 'full-bp' puts layer 0 (conv3x3/1 pad 1 64 -> 8x4x4 relu maxpool) in the backprop tail"),
        ("1", "--split '1' puts layer 1"),
        ("9", "--split must be one of full-zo, cls2, cls1, full-bp or a layer index 0..4, got 9"),
    ],
)
def test_the_board_entry_refuses_a_split_into_the_conv_layers_in_one_line(tmp_path, capsys, split, message):
    """``python -m pezo.driver --split`` on a digits-cnn design with the tail: one line naming --split and the
    net's allowed splits, exit 2, before any device access."""
    from pezo.driver.__main__ import main

    bmap = BoardMap(net_config("digits-cnn", batch=8, backprop=True))
    design = tmp_path / "design"
    design.mkdir()
    described = {"design": "engine", "map": bmap.to_dict(), "regs_base": 0, "windows_base": 0, "windows_size": 8}
    (design / "config.json").write_text(json.dumps(described))
    argv = ["--design", str(design), "--mem", str(tmp_path / "never-opened"), "--split", split, "--steps", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    if split != "9":
        assert "split must be one of full-zo, cls2, cls1 or a layer index 2..4" in err
    assert not (tmp_path / "never-opened").exists()
