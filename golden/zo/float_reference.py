"""The float references of the whole-network INT8 trainer (``pezo.golden.zo.int8_net``).

**Float reference** (``train_float_mezo``): MeZO (``pezo.golden.zo.mezo``, stream mode, Gaussian z) on a
float32 MLP of the same shape (no biases, ReLU), same data (the dequantised int8 inputs divided by their
training RMS, so one learning rate suits both tasks), same batch schedule and forward-pass budget,
He-normal start, cross-entropy loss.

**Backprop reference** (``float_mlp_backprop``): scikit-learn's MLP with exact gradients on the same shots.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from pezo.golden.config import check_int
from pezo.golden.engine.nets import NET_NAMES, NETS
from pezo.golden.engine.network import Layer
from pezo.golden.engine.zo_engine import MAX_BATCH
from pezo.golden.losses import cross_entropy
from pezo.golden.zo.families import make_sampler
from pezo.golden.zo.int8_head import STEPS_RANGE, batch_schedule
from pezo.golden.zo.int8_net import CURVE_LOSS_WINDOW, progress_bar
from pezo.golden.zo.mezo import MeZO, MeZOConfig
from pezo.golden.zo.net_config import NetTrainConfig, check_choice, check_number
from pezo.golden.zo.net_data import NetData, load_data

DENSE_NETS = tuple(n for n in NET_NAMES if all(l.kind == "dense" for l in NETS[n]))
"""The nets float MeZO's MLP twin covers (a conv net's float reference is ``golden.zo.float_cnn``)."""
BACKPROP_L2_GRID = (1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
BACKPROP_INITS = (0, 1, 2)


def float_mlp_backprop(data: NetData, hidden: tuple) -> dict:
    """The first-order reference for a net's shape: scikit-learn's ``MLPClassifier`` (float64, ReLU hidden
    layers of widths ``hidden`` with biases, Adam, full-batch loss with L2 ``alpha``, up to 1 000 epochs of
    minibatches of 200) on the float inputs divided by their training RMS (as ``train_float_mezo``). ``alpha``
    from ``BACKPROP_L2_GRID`` and the init from ``BACKPROP_INITS`` are chosen together on the validation
    split (ties: the larger alpha, then the first init); the test split is never seen in the choice. Cached
    per data object. What it answers: how close exact gradients get this MLP shape to the linear probe
    on the same shots, i.e. how much of a ZO gap is the shape's and how much the optimiser's."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    key = tuple(int(h) for h in hidden)
    if data.backprop is None:
        data.backprop = {}
    if key not in data.backprop:
        rms = max(float(np.sqrt(np.mean(np.square(data.float_x["train"])))), 1e-12)
        x = {n: np.asarray(v, dtype=np.float64) / rms for n, v in data.float_x.items()}
        best = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for alpha in sorted(BACKPROP_L2_GRID, reverse=True):
                for init in BACKPROP_INITS:
                    model = MLPClassifier(key, alpha=alpha, max_iter=1000, random_state=init)
                    model.fit(x["train"], data.y["train"])
                    val = float(model.score(x["val"], data.y["val"]))
                    if best is None or val > best[0]:
                        best = (val, alpha, init, model)
        val, alpha, init, model = best
        data.backprop[key] = {
            "float_mlp_backprop_test_accuracy": float(model.score(x["test"], data.y["test"])),
            "float_mlp_backprop_val_accuracy": val,
            "float_mlp_backprop_train_accuracy": float(model.score(x["train"], data.y["train"])),
            "float_mlp_backprop_l2": alpha,
            "float_mlp_backprop_init": init,
            "float_mlp_backprop_hidden": list(key),
        }
    return dict(data.backprop[key])


# -- the float reference ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FloatMeZOConfig:
    """Float MeZO on the net's shape: ``lr`` and ``eps`` (> 0), the rest as ``NetTrainConfig``."""

    net: str = "digits-mlp"
    lr: float = 1e-3
    eps: float = 1e-3
    steps: int = 4000
    batch: int = 128
    eval_every: int = 250
    seed: int = 1
    shots: int = 256
    test_size: int = 1000

    def __post_init__(self):
        check_choice("net", self.net, DENSE_NETS)
        check_number("lr", self.lr, 0, 1e6)
        check_number("eps", self.eps, 0, 1e6)
        check_int("steps", self.steps, *STEPS_RANGE)
        check_int("batch", self.batch, 1, MAX_BATCH)
        check_int("eval_every", self.eval_every, *STEPS_RANGE)
        check_int("seed", self.seed, 1, 16383)
        check_int("shots", self.shots, 1, 1 << 20)
        check_int("test_size", self.test_size, 1, 100_000)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


FLOAT_TUNED = {
    "digits-mlp": FloatMeZOConfig(net="digits-mlp", lr=3e-3, eps=1e-3),
    "rt-mlp": FloatMeZOConfig(net="rt-mlp", lr=1e-3, eps=1e-3),
    "rt-head": FloatMeZOConfig(net="rt-head", lr=1e-3, eps=1e-3),
}
"""Float MeZO's learning rate and epsilon per net (steps and batch follow ``TUNED``). Measured (batch 128,
seed 1, best-validation test accuracy): digits-mlp lr 3e-3 0.877 (1e-2 and 3e-2 diverge to chance),
rt-mlp lr 1e-3 0.674 (3e-3 0.635, 1e-2 0.578)."""


def float_forward(params: dict, layers: tuple, x: np.ndarray) -> np.ndarray:
    """Logits of the float MLP: ``h = relu(h @ w_l.T)`` for the hidden layers (as the layer program,
    without shifts), ``h @ w_L.T`` last."""
    h = x
    for i, layer in enumerate(layers):
        h = h @ params[f"w{i}"].T
        if layer.relu:
            h = np.maximum(h, 0)
    return h


def train_float_mezo(config: FloatMeZOConfig, progress: bool = False, data: NetData | None = None) -> dict:
    """Golden float MeZO (``pezo.golden.zo.mezo.MeZO``, stream mode, Gaussian z) on the net's shape:
    same data (dequantised int8 inputs), batches (``batch_schedule``) and two forward passes per step.
    Returns the keys of ``train_int8_net`` (``loss`` = "float-mezo"); inputs scaled to unit RMS."""
    data = data or load_data(
        NetTrainConfig(net=config.net, seed=config.seed, shots=config.shots, test_size=config.test_size)
    )
    layers: tuple[Layer, ...] = NETS[config.net]
    rng = np.random.default_rng([config.seed, 0xF10A])
    params = {
        f"w{i}": (rng.standard_normal((l.outputs, l.inputs)) * math.sqrt(2.0 / l.inputs)).astype(np.float32)
        for i, l in enumerate(layers)
    }
    names = list(params)
    dim = sum(p.size for p in params.values())
    mezo = MeZO(
        params,
        names,
        make_sampler("gaussian", dim, seed=config.seed + 1),
        MeZOConfig(lr=config.lr, eps=config.eps, mode="stream"),
    )
    rms = float(np.sqrt(np.mean(np.square(data.float_x["train"]))))
    fx = {n: (v / rms).astype(np.float32) for n, v in data.float_x.items()}

    def accuracy(p, split):
        return float((float_forward(p, layers, fx[split]).argmax(axis=1) == data.y[split]).mean())

    schedule = batch_schedule(len(data.y["train"]), config.batch, config.steps, config.seed)
    start_test, start_val = accuracy(params, "test"), accuracy(params, "val")
    best_val, best_step, best = start_val, 0, {k: v.copy() for k, v in params.items()}
    curve = [{"step": 0, "forward_passes": 0, "val_accuracy": start_val, "train_loss": None}]
    losses, seconds = [], 0.0
    bar = progress_bar(progress, config.steps, f"float MeZO {config.net}")
    for step, rows in enumerate(schedule):
        x, y = fx["train"][rows], data.y["train"][rows]
        t0 = time.perf_counter()
        record = mezo.step(step, lambda p: cross_entropy(float_forward(p, layers, x), y))  # noqa: B023 - called now
        seconds += time.perf_counter() - t0
        if not math.isfinite(record.loss):
            raise FloatingPointError(f"float MeZO diverged at step {step} (lr={config.lr})")
        losses.append(record.loss)
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = accuracy(params, "val")
            curve.append(
                {
                    "step": step + 1,
                    "forward_passes": 2 * (step + 1),
                    "val_accuracy": val,
                    "train_loss": float(np.mean(losses[-CURVE_LOSS_WINDOW:])),
                }
            )
            if val > best_val:
                best_val, best_step, best = val, step + 1, {k: v.copy() for k, v in params.items()}
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4f}", val=f"{curve[-1]['val_accuracy']:.3f}")
    if bar is not None:
        bar.close()
    final_test = accuracy(params, "test")
    return {
        "net": config.net,
        "loss": "float-mezo",
        "seed": config.seed,
        "steps": config.steps,
        "test_accuracy": accuracy(best, "test"),
        "start_accuracy": start_test,
        "final_test_accuracy": final_test,
        "best_step": best_step,
        "best_val_accuracy": best_val,
        "start_val_accuracy": start_val,
        "forward_passes": 2 * config.steps,
        "seconds_per_step": seconds / config.steps,
        "curve": curve,
        "train_loss_start": float(np.mean(losses[:CURVE_LOSS_WINDOW])),
        "train_loss_end": float(np.mean(losses[-CURVE_LOSS_WINDOW:])),
        "config": config.to_dict(),
    }
