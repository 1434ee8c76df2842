"""The seed methods by name, and the training loop that runs any of them.

=================  ===================================================================================
method             what a step does (module)
=================  ===================================================================================
mezo               MeZO (``pezo.golden.zo.mezo``, ``MeZOMethod`` here): +-eps z, g = (l+ - l-)/(2 eps),
                   theta -= lr g z, q queries
elasticzo          ElasticZO (``pezo.golden.methods.elasticzo``): layers 1..C by MeZO-style ZO with g
                   clipped to +-g_clip and the merged restore+update, layers C+1..L by backprop + SGD on
                   the activations of the -eps pass (no third pass)
elasticzo-int8     ElasticZO-INT8 (``pezo.golden.methods.elasticzo``): NITI int8 weights, sparse uniform
                   integer z with the p_zero schedule, g = sign(l+ - l-) (float CE, or the integer CE sign
                   of Eq. 12 with ``loss_sign="integer"``), PSR(g z, b_ZO) updates, NITI integer BP tail
poormans           Poor Man's (``pezo.golden.methods.poormans``): real-quantised int8 net, layer-wise
                   forward differences with mu = 1 LSB Rademacher (XORShift32), weight or node
                   perturbation per layer (d_w < d_a), Eq. 11 update with NQ/(NQ+d-1) and 1/s^2, block
                   selection
sign-m-spsa        Stepping Forward (``pezo.golden.methods.stepping_forward``): 16w8a fixed point, m
                   perturbations per step (each on its own batch), sign(l+ - l-) z_q accumulated,
                   multiply-shift update
=================  ===================================================================================

``make_method(config, task)`` returns the method object of ``config.method`` (the interface of
``pezo.golden.methods.base``). ``train_method`` runs a config: mini-batches from an epoch-wise shuffle,
validation every ``eval_every`` steps, the reported ``test_accuracy`` is the best-validation
checkpoint's (as the golden trainer). Its summary has the golden trainer's keys plus ``method``,
``split``, ``memory_bytes`` (the paper calculators, ``pezo.golden.methods.memory``) and
``forward_equivalents`` (MACs / full-forward MACs).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace as dc_replace

import numpy as np

from pezo.golden.losses import check_blowup, cross_entropy
from pezo.golden.methods.base import FloatMLPMethod, MethodConfig, StepStats, accuracy, batch_stream
from pezo.golden.methods.elasticzo import ElasticZO, ElasticZOInt8
from pezo.golden.methods.memory import method_memory
from pezo.golden.methods.nets import forward, forward_macs, layers_of, weight_name
from pezo.golden.methods.poormans import PoorMans
from pezo.golden.methods.stepping_forward import SignMSPSA
from pezo.golden.methods.tasks import load
from pezo.golden.zo.families import make_sampler
from pezo.golden.zo.mezo import MeZO, MeZOConfig


class MeZOMethod(FloatMLPMethod):
    """MeZO on the float MLP (``pezo.golden.zo.mezo.MeZO``, stream mode: the FPGA's read-only perturbation)."""

    def __init__(self, config: MethodConfig, task):
        self.config, self.task = config, task
        self.params = task.start
        names = [weight_name(i) for i in range(layers_of(self.params))]
        dim = sum(self.params[n].size for n in names)
        sampler = config.sampler(dim) or make_sampler("gaussian", dim, seed=config.seed + 1)
        self.sampler = sampler
        self.mezo_config = MeZOConfig(
            lr=config.learning_rate, eps=config.epsilon, queries=config.n_queries, mode="stream"
        )
        self.optimiser = MeZO(self.params, names, sampler, self.mezo_config)
        self.trainable_params = dim

    def step(self, step, next_batch):
        x, y = next_batch()
        self.optimiser.config = dc_replace(self.mezo_config, lr=self.config.lr_at(step))
        record = self.optimiser.step(step, lambda p: cross_entropy(forward(p, x)[0], y))
        q = self.config.n_queries
        return StepStats(record.loss, 2 * q, 2 * q * forward_macs(self.task.sizes, len(y)))

    def describe(self):
        return {"sampler": self.sampler.describe(), "eps": self.config.epsilon, "queries": self.config.n_queries}


def make_method(config: MethodConfig, task):
    if config.method == "mezo":
        return MeZOMethod(config, task)
    if config.method == "elasticzo":
        return ElasticZO(config, task)
    if config.method == "elasticzo-int8":
        return ElasticZOInt8(config, task)
    if config.method == "poormans":
        return PoorMans(config, task)
    return SignMSPSA(config, task)


def train_method(config: MethodConfig, progress: bool = False, task=None, stop_on_blowup: bool = False) -> dict:
    """Run ``config``; the summary (module docstring). ``task`` overrides ``pezo.golden.methods.tasks.load``. A
    loss that is not finite raises FloatingPointError; with ``stop_on_blowup`` so does a finite one that blew up
    (``golden.losses.check_blowup``: ``LossBlowUp``)."""
    task = task or load(config.task, config.seed, hidden=config.hidden, shots=config.shots, progress=progress)
    method = make_method(config, task)
    start_accuracy = accuracy(method, task.x_test, task.y_test)
    best_val = start_val = accuracy(method, task.x_val, task.y_val)
    best_step, best = 0, method.state()
    rng = np.random.default_rng([config.seed, 0xBA7C])
    indices = batch_stream(len(task.y_train), config.batch_size, rng)

    def next_batch():
        idx = next(indices)
        return task.x_train[idx], task.y_train[idx]

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=config.steps, desc=f"{config.method} {config.task}", unit="step", file=sys.stderr)
    losses, val_history, passes, macs, seconds = [], [(0, best_val)], 0, 0, 0.0
    for step in range(config.steps):
        t0 = time.perf_counter()
        stats = method.step(step, next_batch)
        seconds += time.perf_counter() - t0
        if not math.isfinite(stats.loss):
            raise FloatingPointError(f"loss is not finite at step {step} (lr={config.learning_rate})")
        if stop_on_blowup and losses:
            check_blowup(step, losses[0], stats.loss, config.family)
        losses.append(stats.loss)
        passes += stats.forward_passes
        macs += stats.forward_macs
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            val = accuracy(method, task.x_val, task.y_val)
            val_history.append((step + 1, val))
            if val > best_val:
                best_val, best_step, best = val, step + 1, method.state()
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.4f}", val=f"{val_history[-1][1]:.3f}")
    if bar is not None:
        bar.close()
    final_test = accuracy(method, task.x_test, task.y_test)
    if best_step != config.steps:
        method.load_state(best)
    test_accuracy = accuracy(method, task.x_test, task.y_test)
    full = forward_macs(task.sizes, config.batch_size)
    summary = {
        "method": config.method,
        "family": config.family or "native",
        "task": config.task,
        "shots": config.shots if config.task not in ("digits", "digits-rot30", "digits-rot45") else len(task.y_train),
        "steps": config.steps,
        "seed": config.seed,
        "test_accuracy": test_accuracy,
        "start_accuracy": start_accuracy,
        "seconds_per_step": seconds / config.steps,
        "final_test_accuracy": final_test,
        "best_step": best_step,
        "best_val_accuracy": best_val,
        "start_val_accuracy": start_val,
        "val_history": val_history,
        "train_loss_start": float(np.mean(losses[:20])),
        "train_loss_end": float(np.mean(losses[-20:])),
        "trainable": "all layers" if config.method != "poormans" else f"block {config.block}",
        "trainable_params": int(method.trainable_params),
        "forward_passes": int(passes),
        "forward_equivalents": macs / full if full else 0.0,
        "train_size": int(len(task.y_train)),
        "val_size": int(len(task.y_val)),
        "test_size": int(len(task.y_test)),
        "split": config.split if config.method.startswith("elasticzo") else None,
        "sizes": list(task.sizes),
        "memory_bytes": method_memory(config, task.sizes),
        "method_details": method.describe(),
        "task_info": task.info,
        "config": config.to_dict(),
    }
    summary["sampler"] = summary["method_details"].get("sampler", {"family": summary["family"]})
    return summary
