"""Golden INT8 ZO training of a whole network on the PE array (``pezo.golden.engine.network``), and its
float reference.

**A step** is the engine's exactly: ``on-chip`` -- ``NetEngine.train_step`` (both passes, the
Crammer-Singer hinge losses of ``golden.engine.loss`` with ``margin``, g = +-g_lr (``g_mode="sign"``) or
sat(round_shift(L+ - L-, g_shift)) (``"scaled"``), the update); ``host`` -- ``NetEngine.forward_zo``, the
host's g from the float cross-entropies (``host_g``: ``int8_head.update_scale`` generalised to a
network), ``NetEngine.update(g)``. Batches: ``int8_head.batch_schedule``. A step is two forward passes.
With a ``split`` (the elastic trainer, ``golden.engine.backprop``) the ZO part covers layers 1..C and the
engine's backprop tail trains the rest after the update (host mode too: the tail is on chip); full BP
(C = 0) is one forward pass and the tail per step, whatever the loss mode.

**Evaluation**: ``NetEngine.infer`` (the engine's exact arithmetic; argmax of the int32 logits, ties to
the lowest class), the split cut into engine batches (the last one padded with zero inputs whose
outputs are dropped). ``test_accuracy`` is at the best-validation checkpoint, or of the host's average of
the last ``average_last`` checkpoints when that is set (``checkpoint_average_val`` records the validation
accuracy of several such averages, for screening on validation).

The run's parameters and the tuned presets: ``pezo.golden.zo.net_config``; the data: ``pezo.golden.zo.net_data``; the
start: ``pezo.golden.zo.net_init``; evaluation: ``pezo.golden.zo.net_eval``;
the float references: ``pezo.golden.zo.float_reference``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from pezo.golden.engine.backprop import split_name
from pezo.golden.engine.network import NetEngine, weights_digest
from pezo.golden.engine.zo_engine import (
    G_MAX,
    G_MIN,
    g_to_fixed,
)
from pezo.golden.losses import cross_entropy
from pezo.golden.zo.net_config import NetTrainConfig
from pezo.golden.zo.net_data import NET_TASKS, NetData, float_probe
from pezo.golden.zo.net_eval import average_weights, engine_accuracy, logit_exponent
from pezo.golden.zo.run import NetRun
from pezo.golden.zo.user_data import load_run_data

CURVE_LOSS_WINDOW = 50
"""Steps averaged for the curves' and the summary's training loss."""


def host_g(logits_plus, logits_minus, labels, config: NetTrainConfig, act_exponent: int) -> tuple[int, float, float]:
    """The host's g (Q8.16) and the float cross-entropies l+, l-: ``int8_head.update_scale`` for a
    network. Logits are worth 2^``logit_exponent``; the perturbed weights share one exponent s_w (the
    presets' -7, the first layer's), so epsilon_real = eps_lsb * 2^s_w and g = lr * (l+ - l-) /
    (2 epsilon_real) / epsilon_real makes ``w -= round(g p)`` MeZO's ``W -= lr g z`` in weight LSBs."""
    net = config.net_config
    unit = 2.0 ** logit_exponent(net, act_exponent)
    loss_plus = cross_entropy(np.asarray(logits_plus, dtype=np.float64) * unit, labels)
    loss_minus = cross_entropy(np.asarray(logits_minus, dtype=np.float64) * unit, labels)
    eps_real = config.eps_lsb * 2.0 ** net.layers[0].weight_exponent
    projected = (loss_plus - loss_minus) / (2 * eps_real)
    return g_to_fixed(config.lr * projected / eps_real), loss_plus, loss_minus


def progress_bar(progress: bool, total: int, desc: str):
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr)


# -- training --------------------------------------------------------------------------------------
def train_int8_net(
    config: NetTrainConfig,
    progress: bool = False,
    data: NetData | None = None,
    probe: bool = True,
    on_model: Callable[[NetEngine], None] | None = None,
) -> dict:
    """Golden INT8 ZO training of ``config.net`` with the engine's exact step (module docstring).

    Returns a summary with (at least) ``test_accuracy`` (best-validation checkpoint, or the average of the
    last ``average_last`` checkpoints: ``model``, ``model_val_accuracy``), ``start_accuracy``,
    ``forward_passes`` (2 per step), ``seconds_per_step`` (training steps only), ``net``, ``loss``,
    ``steps`` and ``curve`` (a list of {step, forward_passes, val_accuracy, train_loss}: ``train_loss`` is
    the mean over the last ``CURVE_LOSS_WINDOW`` steps of the trained loss -- the hinge per example in
    logit LSBs on-chip, the float cross-entropy on the host -- averaged over both passes). ``on_model``, if
    given, is called with the engine holding the reported model's weights (e.g. to export them). BLAS runs on
    one thread here: the engine's products are small and exact, so threads only add overhead (10x slower
    measured on a loaded 2-core machine) and never change a result."""
    if not isinstance(config, NetTrainConfig):
        raise ValueError(f"config must be a NetTrainConfig, got {type(config).__name__}")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _train_int8_net(config, progress, data, probe, on_model)


def _train_int8_net(config, progress, data, probe, on_model) -> dict:
    data = data or load_run_data(config)
    net, loss_cfg = config.net_config, config.loss_config
    train_size = len(data.y["train"])
    if net.array.batch > train_size:
        raise ValueError(f"batch must be <= the {train_size} training examples, got {net.array.batch}")
    run = NetRun.prepare(config, data)
    init = run.init
    engine = NetEngine(net, weights=run.weights, biases=run.biases)
    schedule = run.schedule(config.steps)
    split = config.split_c
    passes_per_step = 1 if split == 0 else 2
    start_val = best_val = engine_accuracy(engine, data.x["val"], data.y["val"])
    start_test = engine_accuracy(engine, data.x["test"], data.y["test"])
    best_step, best_w = 0, engine.flat.copy()
    curve = [{"step": 0, "forward_passes": 0, "val_accuracy": start_val, "train_loss": None}]
    losses, zero_g, saturated_g = [], 0, 0
    checkpoints = []  # the weights at every validation checkpoint (host read-back)
    first_saturated = None  # the first step (1-based) whose g hit the Q8.16 limit
    method = "ZO" if split == len(net.layers) else f"elastic {split_name(split, len(net.layers))}"
    bar = progress_bar(progress, config.steps, f"int8 {method} {config.net} {config.loss} {config.stream.strategy}")
    seconds = 0.0
    for step, rows in enumerate(schedule):
        x, y = data.x["train"][rows], data.y["train"][rows]
        t0 = time.perf_counter()
        if config.loss == "on-chip" or split == 0:
            record = engine.train_step(x, y, loss_cfg)
            g = record.g
            seconds += time.perf_counter() - t0
            passes = 1 if split == 0 else 2
            losses.append((record.loss_plus + record.loss_minus) / (passes * net.array.batch))
        else:
            plus, minus = engine.forward_zo(x, split)
            g, l_plus, l_minus = host_g(plus, minus, y, config, data.act_exponent)
            engine.update(g, loss_cfg.wd_shift, loss_cfg.wd_every)
            if split < len(net.layers):
                engine.backprop(y, loss_cfg.margin, split, loss_cfg.bp_bits)
            seconds += time.perf_counter() - t0
            losses.append(0.5 * (l_plus + l_minus))
        zero_g += g == 0
        saturated_g += g in (G_MIN, G_MAX)
        if g in (G_MIN, G_MAX) and first_saturated is None:
            first_saturated = step + 1
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = engine_accuracy(engine, data.x["val"], data.y["val"])
            curve.append(
                {
                    "step": step + 1,
                    "forward_passes": passes_per_step * (step + 1),
                    "val_accuracy": val,
                    "train_loss": float(np.mean(losses[-CURVE_LOSS_WINDOW:])),
                }
            )
            checkpoints.append(engine.flat.copy())
            if val > best_val:
                best_val, best_step, best_w = val, step + 1, engine.flat.copy()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4g}", val=f"{curve[-1]['val_accuracy']:.3f}")
    if bar is not None:
        bar.close()
    final_test = engine_accuracy(engine, data.x["test"], data.y["test"])
    final_w = engine.flat.copy()
    averages = {}  # validation accuracy of the mean of the last n checkpoints (diagnostic: validation only)
    for n in sorted({1, 2, 4, 8, 16, len(checkpoints) // 2, config.average_last} - {0}):
        if n <= len(checkpoints):
            engine.load_weights(average_weights(checkpoints[-n:]))
            averages[n] = engine_accuracy(engine, data.x["val"], data.y["val"])
    model_w = average_weights(checkpoints[-config.average_last :]) if config.average_last else best_w
    engine.load_weights(model_w)
    summary = {
        "net": config.net,
        "loss": config.loss,
        "g_mode": config.g_mode if config.loss == "on-chip" else "host",
        "strategy": config.stream.strategy,
        "seed": config.seed,
        "split_seed": config.seed,
        "steps": config.steps,
        "test_accuracy": engine_accuracy(engine, data.x["test"], data.y["test"]),
        "start_accuracy": start_test,
        "final_test_accuracy": final_test,
        "best_step": best_step,
        "best_val_accuracy": best_val,
        "start_val_accuracy": start_val,
        "model": f"mean of the last {config.average_last} checkpoints"
        if config.average_last
        else "best-validation checkpoint",
        "model_val_accuracy": averages[config.average_last] if config.average_last else best_val,
        "checkpoint_average_val": {str(n): v for n, v in averages.items()},
        "forward_passes": passes_per_step * config.steps,
        "split": split_name(split, len(net.layers)),
        "split_c": split,
        "bp_bits": loss_cfg.bp_bits if split < len(net.layers) else None,
        "seconds_per_step": seconds / config.steps,
        "curve": curve,
        "train_loss_start": float(np.mean(losses[:CURVE_LOSS_WINDOW])),
        "train_loss_end": float(np.mean(losses[-CURVE_LOSS_WINDOW:])),
        "zero_g_steps": int(zero_g),
        "g_saturated_steps": int(saturated_g),
        "g_saturated_first_step": first_saturated,
        "act_exponent": data.act_exponent,
        "logit_exponent": logit_exponent(net, data.act_exponent),
        "shifts": [l.shift for l in net.layers[:-1]],
        "weights": net.weights,
        "weight_range": [int(model_w.min()), int(model_w.max())],
        "final_weights_digest": weights_digest(final_w),
        "weight_change_lsb": float(np.abs(final_w - run.flat_weights).mean()),
        "init": init,
        "train_size": train_size,
        "val_size": len(data.y["val"]),
        "test_size": len(data.y["test"]),
        "data": data.info,
        "config": config.to_dict(),
    }
    if on_model is not None:
        on_model(engine)
    if probe and config.data is None and NET_TASKS.get(config.net_name, "digits") != "digits":
        summary.update(float_probe(data))
        summary["gap_points"] = 100 * (summary["float_probe_test_accuracy"] - summary["test_accuracy"])
    return summary
