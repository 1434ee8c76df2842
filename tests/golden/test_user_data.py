"""User data (golden.zo.user_data) and the power-of-two rule (golden.engine.calibration): .npz and .csv read,
missing splits held out by seed, bad data refused with one line, quantisation as ONNX QuantizeLinear."""

import numpy as np
import pytest

from pezo.golden.engine.calibration import pow2_exponent, quantize_rint
from pezo.golden.zo.user_data import load_user_data, read_user_data, user_splits


@pytest.mark.parametrize("peak, exponent", [(127, 0), (127.01, 1), (1.0, -6), (0.5, -7), (16, -2), (254, 1), (0, 0)])
def test_the_exponent_is_the_smallest_that_holds_the_peak(peak, exponent):
    assert pow2_exponent([peak, -peak / 2]) == exponent


def test_quantisation_rounds_half_to_even_and_saturates():
    assert quantize_rint([0.5, 1.5, 2.5, -0.5, -2.5, 300, -300], 0).tolist() == [0, 2, 2, 0, -2, 127, -128]


def test_a_csv_with_a_label_column_reads_and_splits_by_seed(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.normal(0, 2, (50, 3)), rng.integers(0, 3, 50)
    rows = ["a,label,b,c"] + [f"{r[0]},{l},{r[1]},{r[2]}" for r, l in zip(x, y)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    raw = read_user_data(tmp_path / "d.csv")
    assert np.allclose(raw["train"][0], x) and raw["train"][1].tolist() == y.tolist()
    splits = user_splits(raw, seed=1)
    assert [len(splits[s][1]) for s in ("train", "val", "test")] == [30, 10, 10]
    assert user_splits(raw, seed=1)["val"][1].tolist() == splits["val"][1].tolist()
    data = load_user_data(tmp_path / "d.csv", 3, 3, None, seed=1)
    assert data.act_exponent == pow2_exponent(splits["train"][0]) and data.x["train"].dtype == np.int64


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"x_train": np.ones((4, 2))}, "x_train and y_train come together"),
        ({"x_train": np.ones((4, 2)), "y_train": np.zeros(3)}, "y_train must hold one label per row of x_train (4)"),
        ({"x_train": np.ones((4, 2)), "y_train": np.full(4, 0.5)}, "y_train must hold integer class labels"),
        ({"x_train": np.ones((4, 2)), "y_train": np.zeros(4), "z": np.ones(1)}, "unknown array 'z'"),
        ({"x_val": np.ones((4, 2)), "y_val": np.zeros(4)}, "x_train and y_train are required"),
    ],
)
def test_bad_npz_files_are_refused_naming_the_array(arrays, message, tmp_path):
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(ValueError) as info:
        read_user_data(tmp_path / "d.npz")
    assert message in str(info.value) and "d.npz" in str(info.value)


def test_a_csv_without_a_label_column_is_refused(tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="has no 'label' column"):
        read_user_data(tmp_path / "d.csv")


@pytest.mark.parametrize("damage", ["truncated", "bad-crc", "not-a-zip"])
def test_a_damaged_npz_is_one_error_naming_the_file(tmp_path, damage):
    """A truncated or corrupt ``.npz`` (``zipfile.BadZipFile``: 'File is not a zip file', 'Bad CRC-32 for file
    ...') is the data file's one error, not a traceback."""
    from pezo.golden.zo.user_data import read_user_data

    path = tmp_path / "d.npz"
    rng = np.random.default_rng(0)
    np.savez(path, x_train=rng.standard_normal((40, 64)), y_train=rng.integers(0, 10, 40))
    raw = bytearray(path.read_bytes())
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "bad-crc":
        start = raw.index(b"x_train.npy") + 200  # inside the stored array's bytes
        raw[start] ^= 0xFF
    else:
        raw = b"this is not a zip archive" + bytes(raw[:10])
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"data file .*d\.npz.*: not a readable \.npz"):
        read_user_data(path)
