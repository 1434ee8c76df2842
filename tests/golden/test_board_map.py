"""The engine top's register/window map (``golden.regs.engine``)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pezo.golden.engine.nets import net_config
from pezo.golden.engine.network import Layer
from pezo.golden.regs.engine import (
    BEAT_BYTES,
    KIND_SHIFT,
    STEP_LOG_DEPTH,
    WINDOW_NAMES,
    BoardMap,
    describe_kinds,
    engine_registers,
    kind_bits,
)


@pytest.mark.parametrize(
    "net,array",
    [
        ("digits-mlp", {"batch": 16}),
        ("rt-mlp", {"rows": 1, "cols": 64, "batch": 256}),
        ("digits-mlp", {"rows": 4, "cols": 16, "batch": 24}),
        ("digits-cnn", {"batch": 16}),
    ],
)
def test_windows_fit_their_slots_and_do_not_overlap(net, array):
    m = BoardMap(net_config(net, **array))
    cfg = m.config
    bases = [w.base for w in m.windows]
    assert [w.name for w in m.windows] == list(WINDOW_NAMES)
    assert bases == [i * m.slot for i in range(len(WINDOW_NAMES))] and m.slot >= 4096
    assert all(w.size <= m.slot for w in m.windows) and len(m.windows) * m.slot <= 1 << m.addr_width
    assert m.window("weights").size == cfg.weights
    # the last byte of the last example and the last logit entry are inside their windows
    assert m.x_offset(cfg.array.batch - 1) + m.x_bytes - 1 < m.window("x").base + m.window("x").size
    last = m.logit_offset(1, 1, cfg.array.batch - 1, cfg.outputs - 1)
    assert m.window("logits").base <= last < m.window("logits").base + m.window("logits").size
    assert m.step_offset(STEP_LOG_DEPTH) == m.step_offset(0) == m.window("steps").base
    assert m.label_offset(3) - m.label_offset(2) == BEAT_BYTES


def test_registers_are_word_aligned_and_unique_and_the_descriptions_name_them():
    regs = engine_registers()
    assert len({r.offset for r in regs}) == len(regs) and all(r.offset < 0x1000 for r in regs)
    m = BoardMap(net_config("digits-mlp", batch=16))
    header = m.c_header()
    for r in regs:
        assert f"#define PEZO_REG_{r.name:<16} 0x{r.offset:03X}u" in header
    for w in m.windows:
        assert f"#define PEZO_WIN_{w.name.upper():<8} 0x{w.base:08X}u" in header
    described = json.loads(m.to_json())
    assert [r["name"] for r in described["registers"]] == [r.name for r in regs]
    assert described["windows"][4]["name"] == "logits" and described["slot"] == m.slot
    assert m.shape_word() == 8 | 8 << 8 | 3 << 16 and m.batch_word() == 16 | 10 << 16
    assert m.register("STATUS") == 0x14


def test_bad_configs_name_the_field():
    with pytest.raises(ValueError, match="cols must be a power of two >= 8"):
        BoardMap(net_config("digits-mlp", rows=8, cols=4, batch=16))
    with pytest.raises(ValueError, match="config must be a NetConfig"):
        BoardMap("digits-mlp")
    with pytest.raises(ValueError, match="window must be one of"):
        BoardMap(net_config("digits-mlp", batch=16)).window("nope")


def test_the_backprop_tail_adds_its_three_registers_and_a_shape_bit():
    """An engine with the tail: SPLIT, BP_BITS, BP_CYCLES after the shared registers, in the header and the
    JSON; SHAPE bit 25 says so. Without it the map is the one every board has."""
    plain, tail = (
        BoardMap(net_config("digits-mlp", batch=16)),
        BoardMap(net_config("digits-mlp", batch=16, backprop=True)),
    )
    assert [r.name for r in tail.registers[len(plain.registers) :]] == ["SPLIT", "BP_BITS", "BP_CYCLES"]
    assert (tail.register("SPLIT"), tail.register("BP_BITS"), tail.register("BP_CYCLES")) == (0x64, 0x68, 0x6C)
    assert "PEZO_REG_SPLIT" in tail.c_header() and "PEZO_REG_SPLIT" not in plain.c_header()
    assert tail.shape_word() == plain.shape_word() | 1 << 25
    with pytest.raises(ValueError, match="register must be one of"):
        plain.register("SPLIT")


def test_a_conv_layer_0_sizes_the_x_window_by_its_patches_and_describes_them():
    """Issue 33: the x window holds the batch memory's words (a conv layer 0's im2col'd patches, input_words * cols
    bytes per example); the JSON and the header carry the geometry a host needs. A dense net's x_bytes is its
    inputs, and its map only gains keys."""
    conv, dense = BoardMap(net_config("digits-cnn", batch=16)), BoardMap(net_config("digits-mlp", batch=16))
    assert conv.x_bytes == conv.config.input_words * 8 == 64 * 16 and conv.x_stride == 1024
    assert conv.window("x").size == 16 * 1024 and dense.x_bytes == dense.config.inputs == 64
    described, plain = json.loads(conv.to_json()), json.loads(dense.to_json())
    assert described["x_layout"] == "patches" and described["x_bytes"] == 1024
    assert described["conv0"] == {
        "in_channels": 1,
        "height": 8,
        "width": 8,
        "kernel": 3,
        "stride": 1,
        "padding": 1,
        "conv_height": 8,
        "conv_width": 8,
        "patch": 9,
        "row_length": 16,
    }
    assert plain["x_layout"] == "inputs" and plain["conv0"] is None and plain["x_bytes"] == 64
    header = conv.c_header()
    assert "#define PEZO_X_BYTES 1024u" in header and "#define PEZO_CONV0_ROW_LENGTH 16u" in header
    assert "#define PEZO_X_BYTES 64u" in dense.c_header() and "PEZO_CONV0" not in dense.c_header()


def _dense_twin(config):
    """A dense net with ``config``'s array, layer count and outputs (digits-cnn's four layers, all dense)."""
    layers = (Layer(64, 64, shift=7, relu=True), Layer(64, 64, shift=7, relu=True), Layer(64, 32, shift=7, relu=True))
    return replace(config, layers=(*layers, config.layers[-1]))


def test_shape_bits_26_to_31_tell_the_layer_kinds():
    """SHAPE bit 26 + min(i, 5) = layer i is a conv: digits-cnn (conv, conv, dense, dense) reads bits 26 and 27 on
    top of the shape its dense twin reads; a dense net's SHAPE is unchanged (0 in the field); a conv at layer 5 or
    later shares bit 31."""
    cnn = BoardMap(net_config("digits-cnn", batch=16))
    dense = BoardMap(_dense_twin(cnn.config))
    assert dense.shape_word() == 8 | 8 << 8 | 4 << 16 and kind_bits(dense.config) == 0
    assert cnn.shape_word() == dense.shape_word() | 0b11 << KIND_SHIFT and cnn.batch_word() == dense.batch_word()
    assert describe_kinds(cnn.shape_word()) == "conv layers 0, 1" and describe_kinds(dense.shape_word()) == (
        "no conv layer"
    )
    assert describe_kinds(1 << 31) == "conv layer 5 or later"
    assert f"#define PEZO_SHAPE 0x{cnn.shape_word():08X}u" in cnn.c_header()
    assert json.loads(cnn.to_json())["shape"] == cnn.shape_word()
