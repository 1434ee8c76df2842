"""The data of the golden whole-network INT8 trainer (``pezo.golden.zo.int8_net``).

**Nets and data** (``pezo.golden.engine.nets``):

* ``digits-mlp`` (64-32-32-10) -- scikit-learn's bundled 8 x 8 digits (1 797 images, offline). Split as
  ``golden.methods``' ``digits`` task: a permutation from ``np.random.default_rng([seed, 0xD1])`` gives
  1 000 train, 300 validation and 497 test images. Inputs: the methods' float pixels ``x / 8 - 1`` in
  [-1, 1] quantised at the activation exponent s_x = -7, i.e. ``q = sat(16 * pixel - 128, -128, 127)``
  (pixel 16 -> 128 saturates to 127: one LSB; every other pixel value 0..15 is exact).
* ``rt-mlp`` (384-64-2), ``rt-head`` (384-2) -- Rotten Tomatoes as ``pezo train-int8``: the int8
  all-MiniLM-L6-v2 embeddings of ``pezo.golden.zo.int8_head.Int8Task`` (k shots per class for training
  and for validation, 1 000 test examples, fixed by ``seed``; s_x = NITI's exponent of the training set).
"""

from __future__ import annotations

import functools
import os
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from pezo.golden.config import cache_dir
from pezo.golden.engine.int8 import quantize
from pezo.golden.lm.probe import fit_linear_probe_val
from pezo.golden.zo.int8_head import Int8Task, Int8TrainConfig

NET_TASKS = {"digits-mlp": "digits", "digits-cnn": "digits", "rt-mlp": "rotten_tomatoes", "rt-head": "rotten_tomatoes"}
DIGITS_SPLIT = (1000, 300, 497)  # train, val, test (as golden.methods.tasks)
DIGITS_EXPONENT = -7
"""s_x of the digits inputs: q = sat((pixel / 8 - 1) * 2^7) = sat(16 * pixel - 128)."""


@dataclass
class NetData:
    """int8 inputs, labels and float inputs per split; the activation exponent s_x; the classes."""

    x: dict
    y: dict
    float_x: dict
    act_exponent: int
    classes: int
    info: dict
    probe_accuracy: float | None = None
    backprop: dict | None = None


def digits_cache_path() -> Path:
    """Where ``_digits`` keeps scikit-learn's digits as arrays: keyed by the scikit-learn version."""
    return cache_dir() / "data" / f"sklearn-digits-{metadata.version('scikit-learn')}.npz"


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    """images float64 [1797, 64] and labels int64 of scikit-learn's digits, the same arrays from
    ``digits_cache_path`` after the first call (importing scikit-learn takes seconds; written atomically, a
    damaged file is read again from scikit-learn)."""
    path = digits_cache_path()
    try:
        with np.load(path) as f:
            images, labels = f["images"], f["labels"]
        if images.shape == (len(labels), 64) and images.dtype == np.float64 and labels.dtype == np.int64:
            return images, labels
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        pass
    from sklearn.datasets import load_digits

    data = load_digits()
    images, labels = data.images.reshape(len(data.images), 64).astype(np.float64), data.target.astype(np.int64)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, images=images, labels=labels)
    os.replace(tmp, path)
    return images, labels


def digits_split(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """train, val, test indices (``golden.methods.tasks.digits_split``'s permutation)."""
    images, _ = _digits()
    order = np.random.default_rng([seed, 0xD1]).permutation(len(images))
    a, b, _ = DIGITS_SPLIT
    return order[:a], order[a : a + b], order[a + b :]


def quantize_digits(pixels) -> np.ndarray:
    """Pixels 0..16 -> int8 at s_x = -7: sat(16 * pixel - 128, -128, 127) (round half up; exact)."""
    return quantize(np.asarray(pixels, dtype=np.float64) / 8.0 - 1.0, DIGITS_EXPONENT)


@functools.lru_cache(maxsize=8)
def _load_data(net: str, seed: int, shots: int, test_size: int) -> NetData:
    if NET_TASKS[net] == "digits":
        images, labels = _digits()
        splits = dict(zip(("train", "val", "test"), digits_split(seed)))
        x = {n: quantize_digits(images[i]) for n, i in splits.items()}
        return NetData(
            x,
            {n: labels[i] for n, i in splits.items()},
            {n: np.ldexp(v.astype(np.float64), DIGITS_EXPONENT) for n, v in x.items()},
            DIGITS_EXPONENT,
            10,
            {"data": "sklearn digits", "split": list(DIGITS_SPLIT)},
        )
    head = Int8TrainConfig(shots=shots, seed=seed, test_size=test_size)
    task = Int8Task.load(head)
    return NetData(
        task.x,
        task.y,
        task.float_x,
        task.act_exponent,
        task.classes,
        {"data": head.task, "shots": shots, "features": "int8 MiniLM embeddings (int8_head.Int8Task)"},
    )


def load_data(config) -> NetData:
    """The data of ``config`` (a ``NetTrainConfig``: its net, seed, shots and test_size), cached per (net task,
    seed, shots, test_size)."""
    key_net = "digits-mlp" if NET_TASKS[getattr(config, "net_name", config.net)] == "digits" else "rt-mlp"
    shots, test = (0, 0) if key_net == "digits-mlp" else (config.shots, config.test_size)
    return _load_data(key_net, config.seed, shots, test)


def float_probe(data: NetData) -> dict:
    """The float linear probe (``golden.lm.probe``, as ``train_int8``) on the same training shots
    (fitted once per data object)."""
    if data.probe_accuracy is None:
        # L2 chosen on the validation split (golden.lm.probe.L2_GRID), never on test
        w, b, _ = fit_linear_probe_val(
            data.float_x["train"], data.y["train"], data.float_x["val"], data.y["val"], data.classes
        )
        data.probe_accuracy = float(((data.float_x["test"] @ w.T + b).argmax(axis=1) == data.y["test"]).mean())
    return {"float_probe_test_accuracy": data.probe_accuracy}
