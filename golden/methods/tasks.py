"""The tasks ``pezo.golden.methods`` trains on: real labelled data, split and seeded.

Vision (scikit-learn's bundled 8x8 handwritten digits, 1 797 images of 10 classes, UCI; no download):

* ``digits`` -- training from scratch. A seeded permutation gives 1 000 train, 300 validation and 497
  test images; pixels 0..16 map to ``x / 8 - 1`` in [-1, 1]. Start: ``pezo.golden.methods.nets.init_mlp``.
* ``digits-rot30`` / ``digits-rot45`` -- ElasticZO's rotated-data fine-tuning (Table 2) in spirit: the
  MLP is pre-trained by backprop (Adam 1e-3, batch 32, ``PRETRAIN_EPOCHS`` epochs; the paper pre-trains
  one Adam epoch on 60 000 MNIST images) on the *upright* train split, then fine-tuned and tested on the
  same splits rotated by 30 or 45 degrees (``scipy.ndimage.rotate``, bilinear, zero fill, same size).

Text (``pezo.golden.lm.data``'s labelled text, e.g. ``rotten_tomatoes``): the golden trainer's head task -- frozen
all-MiniLM-L6-v2 sentence embeddings (``pezo.golden.zo.int8_head.sentence_embeddings``, cached on disk) times
``HEAD_SCALE``, a linear 384 -> classes head trained from a seeded Xavier start; k shots per class for
train and validation and 1 000 test examples (``few_shot_split``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from pezo.golden.lm.data import TASKS, few_shot_split, load_task
from pezo.golden.methods.nets import Adam, backward, forward, init_mlp, softmax_grad
from pezo.golden.zo.int8_head import sentence_embeddings

VISION_TASKS = ("digits", "digits-rot30", "digits-rot45")
ROTATIONS = {"digits": 0, "digits-rot30": 30, "digits-rot45": 45}
DIGITS_SPLIT = (1000, 300, 497)  # train, val, test
PRETRAIN_EPOCHS = 10
HEAD_SCALE = 20.0


def all_tasks() -> tuple[str, ...]:
    return VISION_TASKS + tuple(TASKS)


@dataclass
class Task:
    """Inputs [n, features] float32 and labels int64 of each split, the net sizes and its start weights."""

    name: str
    sizes: tuple[int, ...]
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    start: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    @property
    def classes(self) -> int:
        return self.sizes[-1]


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.images.astype(np.float32), data.target.astype(np.int64)


def rotate_images(images: np.ndarray, degrees: float) -> np.ndarray:
    """Each [8, 8] image rotated by ``degrees`` about its centre (bilinear, zero fill, same size)."""
    if degrees == 0:
        return images.copy()
    from scipy.ndimage import rotate

    return np.stack([rotate(img, degrees, reshape=False, order=1, mode="constant", cval=0.0) for img in images])


def digits_split(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    images, _ = _digits()
    order = np.random.default_rng([seed, 0xD1]).permutation(len(images))
    a, b, _ = DIGITS_SPLIT
    return order[:a], order[a : a + b], order[a + b :]


def pretrain(sizes, x, y, seed: int, epochs: int | None = None, batch: int = 32) -> dict:
    """Backprop pre-training (Adam 1e-3) of ``init_mlp(sizes, seed)`` on (x, y): the fine-tuning start."""
    epochs = PRETRAIN_EPOCHS if epochs is None else epochs
    params = init_mlp(sizes, seed)
    opt = Adam(params, lr=1e-3)
    rng = np.random.default_rng([seed, 0xAD])
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for s in range(0, len(order) - batch + 1, batch):
            idx = order[s : s + batch]
            logits, inputs = forward(params, x[idx])
            opt.step(backward(params, inputs, softmax_grad(logits, y[idx]), 0))
    return params


@functools.lru_cache(maxsize=8)
def _vision(name: str, seed: int, hidden: tuple) -> Task:
    images, labels = _digits()
    train, val, test = digits_split(seed)
    sizes = (64,) + tuple(hidden) + (10,)

    def inputs(idx, degrees):
        return (rotate_images(images[idx], degrees).reshape(len(idx), 64) / 8.0 - 1.0).astype(np.float32)

    degrees = ROTATIONS[name]
    task = Task(
        name,
        sizes,
        inputs(train, degrees),
        labels[train],
        inputs(val, degrees),
        labels[val],
        inputs(test, degrees),
        labels[test],
        info={"rotation_degrees": degrees, "data": "sklearn digits"},
    )
    if degrees:
        task.start = pretrain(sizes, inputs(train, 0), labels[train], seed)
        task.info["pretrain"] = {
            "optimiser": "adam",
            "lr": 1e-3,
            "epochs": PRETRAIN_EPOCHS,
            "batch": 32,
            "data": "upright train split",
        }
    else:
        task.start = init_mlp(sizes, seed)
    return task


@functools.lru_cache(maxsize=4)
def _text(name: str, seed: int, shots: int, progress: bool) -> Task:
    data = load_task(name)
    split = few_shot_split(data, shots, seed, test_size=1000)

    def inputs(idx):
        return (HEAD_SCALE * sentence_embeddings(name, idx, progress=progress)).astype(np.float32)

    sizes = (384, len(data.classes))
    return Task(
        name,
        sizes,
        inputs(split.train),
        data.labels[split.train],
        inputs(split.val),
        data.labels[split.val],
        inputs(split.test),
        data.labels[split.test],
        start=init_mlp(sizes, seed),
        info={"data": name, "shots": shots, "features": f"MiniLM embedding x {HEAD_SCALE:g}"},
    )


def load(name: str, seed: int, hidden=(32, 32), shots: int = 16, progress: bool = False) -> Task:
    """The task ``name`` (``all_tasks()``) for ``seed``; start weights are copies (the caller owns them)."""
    if name not in all_tasks():
        raise ValueError(f"task must be one of {', '.join(all_tasks())}, got {name!r}")
    task = _vision(name, seed, tuple(hidden)) if name in VISION_TASKS else _text(name, seed, shots, progress)
    return Task(
        task.name,
        task.sizes,
        task.x_train,
        task.y_train,
        task.x_val,
        task.y_val,
        task.x_test,
        task.y_test,
        {k: v.copy() for k, v in task.start.items()},
        dict(task.info),
    )
