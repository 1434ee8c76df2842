"""Memory calculators against the ElasticZO digest (5.3, 5.4, Appendix A) and Poor Man's Table 3."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from pezo.golden.methods.memory import (
    LENET5,
    LOSS_BYTES,
    POINTNET,
    SEED_BYTES,
    SPLITS,
    LayerSpec,
    memory_fp32,
    memory_int8,
    mlp_specs,
    poormans_memory,
    split_index,
)

MIB = 1 << 20
KIB = 1 << 10


def pct(extra: int, base: int) -> float:
    """Overhead of ``extra`` bytes over ``base`` bytes, in percent."""
    return 100.0 * extra / base


# ----------------------------------------------------------------------------------------------
# Independent oracle: digest Appendix A, rewritten over plain tuples (not over LayerSpec fields).
# Row: (activations, params fp32, params int8, trainable, inputs).


def oracle_rows(layers):
    return [(l.activations, l.params_fp32, l.params_int8, l.trainable, l.inputs) for l in layers]


def oracle_fp32(rows, batch: int, c: int) -> int:
    theta = sum(r[1] for r in rows)
    acts = batch * sum(r[0] for r in rows)
    grads = sum(r[1] for r in rows[c:])
    errs = batch * sum(r[0] for r in rows[c:])
    return 4 * (theta + acts + grads + errs)


def oracle_int8(rows, batch: int, c: int) -> int:
    theta = sum(r[2] for r in rows)
    a8 = batch * sum(r[0] for r in rows)
    a32 = 4 * batch * sum(r[0] for r in rows if r[3])
    g8 = sum(r[2] for r in rows[c:])
    e8 = batch * sum(r[0] for r in rows[c:])
    bp = [i for i, r in enumerate(rows) if i >= c and r[3]]
    if c == 0:
        e32 = 4 * batch * sum(rows[i][4] for i in bp if i > 0)
    else:
        e32 = 4 * batch * sum(rows[i][4] for i in bp[1:])
    return theta + a8 + a32 + g8 + e8 + 4 * g8 + e32


MLP = mlp_specs([64, 64, 32, 10])


@pytest.mark.parametrize("net", [LENET5, POINTNET, MLP], ids=["lenet5", "pointnet", "mlp"])
@pytest.mark.parametrize("batch", [1, 32, 256])
def test_matches_appendix_a_oracle_for_every_split(net, batch):
    rows = oracle_rows(net)
    for c in range(len(net) + 1):
        assert memory_fp32(net, batch, c)["total"] == oracle_fp32(rows, batch, c)
        assert memory_int8(net, batch, c)["total"] == oracle_int8(rows, batch, c)


def test_appendix_a_comment_numbers():
    zo = memory_fp32(LENET5, 32, 11)["total"]
    assert zo == 2_742_568
    assert memory_fp32(LENET5, 32, 10)["total"] - zo == 4_680
    assert memory_int8(LENET5, 32, 11)["total"] == 1_716_318
    assert memory_fp32(LENET5, 256, 11)["total"] == 18_922_536
    assert memory_int8(LENET5, 256, 11)["total"] == 12_977_694


# ----------------------------------------------------------------------------------------------
# Networks and splits (digest 5.1, 5.2, V2)


def test_lenet5_reconstruction():
    assert len(LENET5) == 11
    assert sum(l.params_fp32 for l in LENET5) == 107_786
    assert sum(l.params_int8 for l in LENET5) == 107_550
    assert sum(l.activations for l in LENET5) == 18_058
    assert [l.params_fp32 for l in LENET5 if l.trainable] == [156, 2_416, 94_200, 10_164, 850]
    assert sum(l.inputs for l in LENET5 if l.trainable) - LENET5[0].inputs == 2_164


def test_pointnet_reconstruction():
    assert sum(l.params_fp32 for l in POINTNET) == 816_744
    feature = POINTNET[:15]
    assert sum(l.params_fp32 for l in feature) == 150_336
    assert sum(l.params_fp32 for l in feature if l.name.startswith("feat_fc")) == 147_648
    assert [l.params_fp32 for l in POINTNET[15:] if l.trainable] == [524_800, 131_328, 10_280]
    assert max(l.activations for l in POINTNET) == 1024 * 1024  # the (B, N, 1024) tensor


class SplitCase(NamedTuple):
    net: tuple[LayerSpec, ...]
    cls2: int
    cls1: int
    zo_params_cls2: int
    zo_params_cls1: int
    zo_share_cls2: float  # percent of params trained by ZO
    zo_share_cls1: float


SPLIT_CASES = {
    "lenet5": SplitCase(LENET5, 10, 8, 106_936, 96_772, 99.2, 89.8),
    "pointnet": SplitCase(POINTNET, len(POINTNET) - 1, len(POINTNET) - 3, 806_464, 675_136, 98.7, 82.7),
}


@pytest.mark.parametrize("name", SPLIT_CASES)
def test_split_index_and_zo_parameter_fractions(name):
    case = SPLIT_CASES[name]
    n = len(case.net)
    assert split_index(case.net, "full-zo") == n
    assert split_index(case.net, "full-bp") == 0
    assert split_index(case.net, "cls2") == case.cls2
    assert split_index(case.net, "cls1") == case.cls1
    assert split_index(case.net, 5) == 5
    total = sum(l.params_fp32 for l in case.net)
    for c, zo, share in (
        (case.cls2, case.zo_params_cls2, case.zo_share_cls2),
        (case.cls1, case.zo_params_cls1, case.zo_share_cls1),
    ):
        zo_params = sum(l.params_fp32 for l in case.net[:c])
        assert zo_params == zo
        assert round(pct(zo_params, total), 1) == share


# ----------------------------------------------------------------------------------------------
# LeNet-5 memory table (digest 5.4)


class Row(NamedTuple):
    batch: int
    split: str
    fp32_mib: float
    fp32_extra_kib: float | None  # extra over Full ZO, KiB (None: not in the table)
    fp32_extra_pct: float | None
    int8_mib: float
    int8_extra_pct: float | None
    ratio: float  # FP32 / INT8


TABLE_5_4 = (
    Row(32, "full-zo", 2.616, None, None, 1.637, None, 1.598),
    Row(32, "cls2", 2.620, 4.57, 0.171, 1.641, 0.263, 1.596),
    Row(32, "cls1", 2.679, 65.27, 2.437, 1.705, 4.140, 1.572),
    Row(32, "full-bp", 5.231, None, 100.0, 2.965, 81.1, 1.764),
    Row(256, "full-zo", 18.046, None, None, 12.376, None, 1.458),
    Row(256, "cls2", 18.059, 13.32, 0.072, 12.383, 0.052, 1.458),
    Row(256, "cls1", 18.262, 221.02, 1.196, 12.554, 1.435, 1.455),
    Row(256, "full-bp", 36.092, None, 100.0, 19.411, 56.8, 1.859),
)


@pytest.mark.parametrize("row", TABLE_5_4, ids=lambda r: f"B{r.batch}-{r.split}")
def test_lenet5_table_5_4(row):
    c = split_index(LENET5, row.split)
    fp32 = memory_fp32(LENET5, row.batch, c)["total"]
    int8 = memory_int8(LENET5, row.batch, c)["total"]
    fp32_zo = memory_fp32(LENET5, row.batch, len(LENET5))["total"]
    int8_zo = memory_int8(LENET5, row.batch, len(LENET5))["total"]
    assert round(fp32 / MIB, 3) == row.fp32_mib
    assert round(int8 / MIB, 3) == row.int8_mib
    assert round(fp32 / int8, 3) == row.ratio
    if row.fp32_extra_kib is not None:
        assert round((fp32 - fp32_zo) / KIB, 2) == row.fp32_extra_kib
    if row.fp32_extra_pct is not None:
        assert round(pct(fp32 - fp32_zo, fp32_zo), 3) == row.fp32_extra_pct
    if row.int8_extra_pct is not None:
        digits = 1 if row.split == "full-bp" else 3
        assert round(pct(int8 - int8_zo, int8_zo), digits) == row.int8_extra_pct


def test_full_bp_ratios_and_paper_text():
    """Paper text (digest 5.3): INT8 Full BP is 1.81x / 1.57x Full ZO; INT8 saves 1.46-1.60x over FP32."""
    for batch, ratio in ((32, 1.81), (256, 1.57)):
        bp = memory_int8(LENET5, batch, 0)["total"]
        zo = memory_int8(LENET5, batch, len(LENET5))["total"]
        assert round(bp / zo, 2) == ratio
        assert memory_fp32(LENET5, batch, 0)["total"] == 2 * memory_fp32(LENET5, batch, len(LENET5))["total"]
    zo_splits = ("full-zo", "cls2", "cls1")
    ratios = [
        memory_fp32(LENET5, b, split_index(LENET5, s))["total"]
        / memory_int8(LENET5, b, split_index(LENET5, s))["total"]
        for b in (32, 256)
        for s in zo_splits
    ]
    assert round(min(ratios), 3) == 1.455 and round(max(ratios), 3) == 1.598


def test_activation_shares():
    c2, c1 = split_index(LENET5, "cls2"), split_index(LENET5, "cls1")
    for c, share in ((c2, 97.65), (c1, 96.57)):  # FP32, B = 256: a_l / total
        m = memory_fp32(LENET5, 256, c)
        assert round(pct(m["activations"], m["total"]), 2) == share
    for c, share in ((c2, 93.49), (c1, 90.01)):  # INT8, B = 32: (int8 + int32 activations) / total
        m = memory_int8(LENET5, 32, c)
        assert round(pct(m["activations"] + m["activations_int32"], m["total"]), 2) == share
    m = memory_fp32(LENET5, 256, len(LENET5))
    assert round(m["activations"] / m["params"], 2) == 42.89


def test_int8_buffer_conventions():
    """Digest 5.4: no int32 error buffer for Cls2, FC3's input (84) for Cls1, 2164 per sample for Full BP."""
    n = len(LENET5)
    assert memory_int8(LENET5, 32, split_index(LENET5, "cls2"))["errors_int32"] == 0
    assert memory_int8(LENET5, 32, split_index(LENET5, "cls1"))["errors_int32"] == 4 * 32 * 84
    assert memory_int8(LENET5, 32, 0)["errors_int32"] == 4 * 32 * 2_164
    zo = memory_int8(LENET5, 32, n)
    assert zo["gradients"] == zo["errors"] == zo["gradients_int32"] == zo["errors_int32"] == 0
    cls1 = memory_fp32(LENET5, 1, split_index(LENET5, "cls1"))
    assert cls1["errors"] == 4 * (84 + 84 + 10)  # FC2, its ReLU, FC3; not the ReLU after FC1


# ----------------------------------------------------------------------------------------------
# PointNet, FP32, B = 32 (digest 5.3, 5.4)


def test_pointnet_memory():
    n = len(POINTNET)
    zo = memory_fp32(POINTNET, 32, n)["total"]
    assert round(zo / MIB, 2) == 507.43
    assert round(memory_fp32(POINTNET, 32, 0)["total"] / MIB, 2) == 1014.87
    for split, extra_pct, share in (("cls2", 0.0087, 99.38), ("cls1", 0.1197, 99.27)):
        m = memory_fp32(POINTNET, 32, split_index(POINTNET, split))
        assert round(pct(m["total"] - zo, zo), 4) == extra_pct
        assert round(pct(m["activations"], m["total"]), 2) == share


# ----------------------------------------------------------------------------------------------
# Structure: Eqs. 2-4 ordering, mlp_specs


def test_mlp_specs():
    assert [l.name for l in MLP] == ["fc1", "relu1", "fc2", "relu2", "fc3"]
    assert [(l.params_fp32, l.params_int8, l.inputs, l.activations) for l in MLP if l.trainable] == [
        (64 * 64 + 64, 64 * 64, 64, 64),
        (64 * 32 + 32, 64 * 32, 64, 32),
        (32 * 10 + 10, 32 * 10, 32, 10),
    ]
    assert all(not l.trainable and l.inputs is None and l.params_fp32 == 0 for l in MLP[1::2])
    assert [l.name for l in mlp_specs([8, 4, 2], relu=False)] == ["fc1", "fc2"]
    assert split_index(MLP, "cls2") == 4 and split_index(MLP, "cls1") == 2


@pytest.mark.parametrize("fn", [memory_fp32, memory_int8])
@pytest.mark.parametrize("batch", [1, 32])
def test_elastic_between_full_zo_and_full_bp(fn, batch):
    n = len(MLP)
    totals = [fn(MLP, batch, c)["total"] for c in range(n + 1)]
    full_zo, full_bp = totals[n], totals[0]
    assert all(full_zo <= t <= full_bp for t in totals)
    assert all(a >= b for a, b in zip(totals, totals[1:]))  # more BP entries, more memory
    assert full_zo < full_bp


def test_equation_identities():
    n = len(MLP)
    zo = memory_fp32(MLP, 8, n)
    assert zo["total"] == zo["params"] + zo["activations"]  # Eq. 3
    bp = memory_fp32(MLP, 8, 0)
    assert bp["gradients"] == bp["params"] and bp["errors"] == bp["activations"]  # Eq. 2
    m = memory_int8(MLP, 8, 2)
    assert m["gradients_int32"] == 4 * m["gradients"]
    assert m["total"] == sum(v for k, v in m.items() if k != "total")


# ----------------------------------------------------------------------------------------------
# Poor Man's Training, Table 3 efficient rows + Sec. 4.3


def test_poormans_node_perturbation_extra():
    n, l, q, d_w = 100, 4, 100, 36_864
    m = poormans_memory(478 * KIB, 190 * KIB, l, q, n, d_w, "np")
    assert m["losses"] == LOSS_BYTES * n * l * q
    assert m["seeds"] == SEED_BYTES * l
    assert m["grad_buffer"] == d_w
    assert m["extra"] - m["seeds"] == LOSS_BYTES * n * l * q + d_w  # Table 3: N*L*Q + d_w
    assert m["total"] == 478 * KIB + 190 * KIB + m["extra"]


def test_poormans_weight_perturbation_extra():
    l, q = 4, 50
    m = poormans_memory(1000, 2000, l, q, 100, 36_864, "wp")
    assert m["losses"] == LOSS_BYTES * l * q  # Table 3: L*Q, independent of N
    assert m["grad_buffer"] == 0
    assert m["extra"] == LOSS_BYTES * l * q + SEED_BYTES * l
    assert m == poormans_memory(1000, 2000, l, q, 1, 0, "wp")
    np_ = poormans_memory(1000, 2000, l, q, 100, 36_864, "np")
    assert np_["extra"] > m["extra"]  # "slightly larger than memory-efficient WP"


def test_poormans_mcunet_table_8_identity():
    """Table 8: 668 KB = 478 KB params + 190 KB peak inference; the BP-free extras come on top."""
    m = poormans_memory(478 * KIB, 190 * KIB, 1, 50, 1, 0, "wp")
    assert m["total"] - m["extra"] == 668 * KIB
    assert round(m["total"] / KIB) == 668


# ----------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: split_index(LENET5, 12), "split must be in 0..11 or one of full-zo, cls2, cls1, full-bp, got 12"),
        (lambda: split_index(LENET5, -1), "split must be in 0..11 or one of full-zo, cls2, cls1, full-bp, got -1"),
        (
            lambda: split_index(LENET5, "cls3"),
            "split must be in 0..11 or one of full-zo, cls2, cls1, full-bp, got 'cls3'",
        ),
        (lambda: split_index(LENET5, True), "split must be in 0..11"),
        (lambda: split_index(mlp_specs([4, 2]), "cls1"), "split cls1 needs at least 2 trainable layers, got 1"),
        (lambda: split_index([], "cls2"), "layers must be a non-empty sequence of LayerSpec"),
        (lambda: memory_fp32(LENET5, 0, 11), "batch must be in 1..1099511627775, got 0"),
        (lambda: memory_int8(LENET5, 32, 12), "first_bp must be in 0..11, got 12"),
        (lambda: memory_fp32(LENET5, 32, "cls2"), "first_bp must be an integer in 0..11, got 'cls2'"),
        (lambda: poormans_memory(0, 0, 1, 1, 1, 0, "zo"), "mode must be one of wp, np, got 'zo'"),
        (lambda: poormans_memory(0, 0, 1, 1, 0, 0, "np"), "batch must be in 1..1099511627775, got 0"),
        (lambda: poormans_memory(0, 0, 0, 1, 1, 0, "wp"), "layers_trained must be in 1..1099511627775, got 0"),
        (lambda: poormans_memory(0, 0, 1, 0, 1, 0, "wp"), "queries must be in 1..1099511627775, got 0"),
        (lambda: poormans_memory(-1, 0, 1, 1, 1, 0, "wp"), "params_bytes must be in 0..1099511627775, got -1"),
        (lambda: mlp_specs([8]), "sizes must be a sequence of at least 2 layer widths"),
        (lambda: mlp_specs([8, 0]), "sizes[1] must be in 1..1099511627775, got 0"),
        (lambda: LayerSpec("fc", 10, 110, 100, True, None), "inputs must be an integer in 1..1099511627775, got None"),
        (lambda: LayerSpec("relu", 10, 5, 0, False, None), "relu: a non-trainable entry must have 0 params"),
    ],
)
def test_bad_input_raises_one_value_error(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message)


def test_splits_constant():
    assert SPLITS == ("full-zo", "cls2", "cls1", "full-bp")
