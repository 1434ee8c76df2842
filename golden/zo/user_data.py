"""A user's labelled data set (``--data PATH``) for the whole-network INT8 trainer, read, checked and quantised.

**Files**: ``.npz`` with ``x_train``, ``y_train`` and optionally ``x_val``, ``y_val``, ``x_test``, ``y_test``
(x: [examples, features] numbers, y: integer class labels 0..classes-1); or ``.csv`` with a header row, one
column named ``label`` (the class) and every other column a feature. A missing validation split is the last
20 % of a seeded permutation of the training examples (``np.random.default_rng([seed, 0xDA7A])``); a missing
test split another 20 % of it (so without both: 60 / 20 / 20).

**Checks** (one ValueError line naming the file and the array): every feature finite (NaN / inf refused, the
first one's row and column named), the width equal to the network's inputs, every label an integer in
0..outputs-1, at least one training example.

**Quantisation** (``pezo.golden.engine.calibration``, the ONNX import's rule too): one power-of-two exponent
s_x for all inputs -- the network file's ``input_exponent`` if it has one, else the smallest integer s with
max|x_train| <= 127 * 2^s -- and q = sat(rint(x / 2^s_x), -128, 127) computed in float32 with round half to
even, exactly what ONNX ``QuantizeLinear`` (scale 2^s_x, zero point 0) does to the same float input, so an
exported model sees the engine's inputs.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from pezo.golden.engine.calibration import pow2_exponent, quantize_rint
from pezo.golden.engine.int8 import ACT_MAX
from pezo.golden.zo.net_data import NET_TASKS, NetData, load_data

SPLITS = ("train", "val", "test")
HELD_OUT = 0.2
"""Share of the training examples a missing validation (or test) split takes."""
LABEL_COLUMN = "label"


def read_user_data(path) -> dict:
    """The raw splits {split: (x float64 [n, features], y int64 [n])} of a ``.npz`` or ``.csv`` file (module
    docstring; missing validation / test splits not yet made)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".csv"):
        raise ValueError(f"data file {str(path)!r} must be .npz or .csv")
    try:
        raw = _read_npz(path) if suffix == ".npz" else _read_csv(path)
    except OSError as exc:
        raise ValueError(f"data file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"data file {str(path)!r}: {exc}") from None
    return raw


def _read_npz(path: Path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = dict(npz)
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:  # truncated, not a zip, a bad CRC-32
        raise ValueError(f"not a readable .npz ({exc})") from None
    known = {f"{v}_{s}" for v in "xy" for s in SPLITS}
    unknown = sorted(set(arrays) - known)
    if unknown:
        raise ValueError(f"unknown array {unknown[0]!r} (allowed: {', '.join(sorted(known))})")
    out = {}
    for split in SPLITS:
        xk, yk = f"x_{split}", f"y_{split}"
        if (xk in arrays) != (yk in arrays):
            raise ValueError(f"{xk} and {yk} come together: one of them is missing")
        if xk in arrays:
            out[split] = _check_split(split, arrays[xk], arrays[yk])
    if "train" not in out:
        raise ValueError("x_train and y_train are required")
    return out


def _read_csv(path: Path) -> dict:
    lines = path.read_text().splitlines()
    if not lines:
        raise ValueError("is empty (a header row with a 'label' column is needed)")
    header = [h.strip() for h in lines[0].split(",")]
    if LABEL_COLUMN not in header:
        raise ValueError(f"the header row has no {LABEL_COLUMN!r} column (columns: {', '.join(header[:8])}...)")
    rows = [line.split(",") for line in lines[1:] if line.strip()]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise ValueError(f"row {i + 2} has {len(row)} fields, the header {len(header)}")
    try:
        table = np.array([[float(v) for v in row] for row in rows], dtype=np.float64).reshape(len(rows), len(header))
    except ValueError as exc:
        raise ValueError(f"a field is not a number ({exc})") from None
    col = header.index(LABEL_COLUMN)
    return {"train": _check_split("train", np.delete(table, col, axis=1), table[:, col])}


def _check_split(split: str, x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 2 or x.dtype.kind not in "iuf" or len(x) == 0:
        raise ValueError(f"x_{split} must be a non-empty 2-D array of numbers [examples, features], got {x.shape}")
    x = x.astype(np.float64)
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        r, c = bad[0]
        raise ValueError(f"x_{split} holds NaN or inf (row {r}, column {c}): clean the data first")
    if y.shape != (len(x),):
        raise ValueError(f"y_{split} must hold one label per row of x_{split} ({len(x)}), got shape {y.shape}")
    if y.dtype.kind not in "iuf" or (y.dtype.kind == "f" and not np.all(np.isfinite(y) & (y == np.round(y)))):
        raise ValueError(f"y_{split} must hold integer class labels")
    return x, y.astype(np.int64)


def input_exponent(x_train) -> int:
    """s_x of a training split: ``calibration.pow2_exponent`` (the smallest s with max|x| <= 127 * 2^s)."""
    return pow2_exponent(x_train)


def quantize_inputs(x, exponent: int) -> np.ndarray:
    """q = sat(rint(float32(x) / 2^exponent), -128, 127) (``calibration.quantize_rint``)."""
    return quantize_rint(x, exponent)


def user_splits(raw: dict, seed: int) -> dict:
    """All three splits: the file's, and the held-out shares of the training examples for missing ones."""
    splits = dict(raw)
    missing = [s for s in ("val", "test") if s not in splits]
    if not missing:
        return splits
    x, y = splits["train"]
    order = np.random.default_rng([seed, 0xDA7A]).permutation(len(x))
    take = int(round(HELD_OUT * len(x)))
    if take == 0 or len(x) - take * len(missing) < 1:
        raise ValueError(
            f"{len(x)} training examples are too few to hold out {' and '.join(missing)} (give x_val / x_test)"
        )
    for i, name in enumerate(missing):
        rows = order[len(x) - take * (i + 1) : len(x) - take * i]
        splits[name] = (x[rows], y[rows])
    keep = order[: len(x) - take * len(missing)]
    splits["train"] = (x[keep], y[keep])
    return splits


def check_against_net(path, splits: dict, inputs: int, outputs: int) -> None:
    """Width against the network's inputs, labels against its outputs (one line naming the file)."""
    for split, (x, y) in splits.items():
        if x.shape[1] != inputs:
            raise ValueError(
                f"data file {str(path)!r}: x_{split} has {x.shape[1]} features, the network takes {inputs} inputs"
            )
        if y.min() < 0 or y.max() >= outputs:
            raise ValueError(
                f"data file {str(path)!r}: y_{split} has labels {int(y.min())}..{int(y.max())}, the network "
                f"classifies into {outputs} outputs (labels 0..{outputs - 1})"
            )


def load_user_data(path, inputs: int, outputs: int, exponent: int | None, seed: int) -> NetData:
    """The ``NetData`` of a user data file for a network of ``inputs`` -> ``outputs`` (module docstring)."""
    splits = user_splits(read_user_data(path), seed)
    check_against_net(path, splits, inputs, outputs)
    s_x = input_exponent(splits["train"][0]) if exponent is None else exponent
    x = {n: quantize_inputs(v[0], s_x) for n, v in splits.items()}
    return NetData(
        x,
        {n: v[1] for n, v in splits.items()},
        {n: np.ldexp(v.astype(np.float64), s_x) for n, v in x.items()},
        s_x,
        outputs,
        {
            "data": str(path),
            "split": [len(splits[n][1]) for n in SPLITS],
            "input_exponent": s_x,
            "input_saturated": round(float(np.mean(np.abs(x["train"]) >= ACT_MAX)), 5),
        },
    )


def load_run_data(config) -> NetData:
    """The data of a ``NetTrainConfig`` run: its ``data`` file (quantised at the network file's
    ``input_exponent`` if it has one), else the built-in data set of the network's name
    (``pezo.golden.zo.net_data``), checked against the network's widths."""
    from pezo.golden.engine.net_file import load_net

    net = load_net(config.net)
    inputs, outputs = net.config.inputs, net.config.outputs
    if config.data is not None:
        return load_user_data(config.data, inputs, outputs, net.input_exponent, config.seed)
    if net.name not in NET_TASKS:
        raise ValueError(
            f"data: network {net.name!r} ({config.net}) has no built-in data set ({', '.join(NET_TASKS)} do): "
            "give a data file (.npz or .csv)"
        )
    data = load_data(config)
    check_against_net(net.name + " data", {"train": (data.x["train"], data.y["train"])}, inputs, outputs)
    return data
