"""Whole-network INT8 ZO training (issue 15): accuracy of the golden engine's on-chip-loss ZO against
golden float MeZO and ElasticZO-INT8 Full ZO at equal forward passes, and the trainer's speed.

    .venv/bin/python benchmarks/bench_int8_net.py [--nets digits-mlp,rt-mlp] [--seeds 1,2,3]
        [--methods int8,int8-wd,int8-pregen,int8-host,float-mezo,elasticzo-int8] [--steps N] [--force | --cached-only]
        [--out benchmarks/results/engine_net]
    .venv/bin/python benchmarks/bench_int8_net.py --speed-steps 200 [--repeats 3] [--before speed.json]

Per net and seed (``pezo.golden.zo.int8_net``):

* ``int8``           -- ``train_int8_net(TUNED[net])``: the engine's exact on-chip step (otf stream);
* ``int8-wd``        -- ``train_int8_net(TUNED_WD[net])`` (nets screened for it: rt-mlp): ``int8`` plus the
  update's integer weight decay ``w -= round_shift(w, wd_shift)`` (a run-time register of the engine) and,
  where ``average_last`` is set, the host's average of the last checkpoints as the reported model;
* ``int8-pregen``    -- the same with the pregen stream (seed 1 only: a spot check);
* ``int8-host``      -- the same net with the host's float cross-entropy g (seed 1 only);
* ``float-mezo``     -- ``train_float_mezo(FLOAT_TUNED[net])``: float32 MeZO on the same MLP shape;
* ``elasticzo-int8`` -- ``golden.methods`` ElasticZO-INT8, split full-zo (every layer by ZO), its own
  defaults (lr 1, r_max 15, the p_zero schedule, float-CE sign), on the same split and MLP shape
  (digits: the methods' ``digits`` task, whose split and inputs ``int8_net`` reuses; rt-mlp: the same
  float embeddings as a methods ``Task`` of sizes 384-64-2 from ``init_mlp``).

Every method gets the same number of steps (two forward passes each) and the same batch. Each run's
summary is cached in ``--out/runs/`` (``--force`` re-runs; ``--cached-only`` runs nothing and tabulates the
cached runs, naming the missing ones; a mean row says over how many seeds). Writes ``accuracy.{md,json,csv}`` (one row
per run, means per net and method) and ``curves-<net>.png`` (validation accuracy against forward passes, mean
over seeds with the min-max band).

Speed (issue 34): ``--speed-steps N [--repeats R] [--before old/speed.json]`` runs nothing cached: fresh
N-step runs of int8, int8-pregen, int8-wd, float-mezo and elasticzo-int8, interleaved R times in one process,
and writes ``speed.{md,json}`` (median seconds per step, INT8 engine / float MeZO, every method's BLAS pool limited to
``--threads``, default 1; with ``--before``, before -> after).
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pezo.golden.engine.nets import NETS  # noqa: E402
from pezo.golden.methods.base import MethodConfig  # noqa: E402
from pezo.golden.methods.nets import init_mlp  # noqa: E402
from pezo.golden.methods.registry import train_method  # noqa: E402
from pezo.golden.methods.tasks import Task, digits_split  # noqa: E402
from pezo.golden.zo.float_reference import (
    FLOAT_TUNED,
    FloatMeZOConfig,
    float_mlp_backprop,  # noqa: E402
    train_float_mezo,
)
from pezo.golden.zo.int8_net import train_int8_net  # noqa: E402
from pezo.golden.zo.net_config import TUNED, TUNED_WD, NetTrainConfig
from pezo.golden.zo.net_data import digits_split as net_digits_split  # noqa: E402
from pezo.golden.zo.net_data import float_probe, load_data  # noqa: E402

METHODS = ("int8", "int8-wd", "int8-pregen", "int8-host", "float-mezo", "elasticzo-int8")
LABELS = {
    "int8": "INT8 engine, on-chip loss (otf)",
    "int8-wd": "INT8 engine, on-chip loss + weight decay (otf)",
    "int8-pregen": "INT8 engine, on-chip loss (pregen)",
    "int8-host": "INT8 engine, host CE g (otf)",
    "float-mezo": "golden float MeZO (float32)",
    "elasticzo-int8": "ElasticZO-INT8 Full ZO",
}
SPOT_CHECK = {"int8-pregen", "int8-host"}  # seed 1 only
COLUMNS = (
    "net",
    "method",
    "seed",
    "steps",
    "batch",
    "forward_passes",
    "start_accuracy",
    "test_accuracy",
    "final_test_accuracy",
    "best_step",
    "best_val_accuracy",
    "float_probe_test_accuracy",
    "float_mlp_backprop_test_accuracy",
    "seconds_per_step",
)


def int8_config(net: str, method: str, seed: int, steps: int | None) -> NetTrainConfig:
    cfg = (TUNED_WD if method == "int8-wd" else TUNED)[net].replace(seed=seed)
    if steps:
        cfg = cfg.replace(steps=steps)
    if method == "int8-pregen":
        cfg = cfg.replace(strategy="pregen")
    if method == "int8-host":
        cfg = cfg.replace(loss="host")
    return cfg


def elasticzo_run(net: str, seed: int, steps: int, batch: int, eval_every: int) -> dict:
    """ElasticZO-INT8 Full ZO (``golden.methods``) on the net's MLP shape and data."""
    if net == "digits-mlp":
        assert all(np.array_equal(a, b) for a, b in zip(digits_split(seed), net_digits_split(seed)))
        config = MethodConfig(
            method="elasticzo-int8",
            task="digits",
            seed=seed,
            steps=steps,
            batch_size=batch,
            split="full-zo",
            hidden=(32, 32),
            eval_every=eval_every,
        )
        return train_method(config)
    base = TUNED[net].replace(seed=seed)
    data = load_data(base)
    sizes = (384, 64, 2) if net == "rt-mlp" else (384, 2)
    fx = {n: data.float_x[n].astype(np.float32) for n in ("train", "val", "test")}
    task = Task(
        "rotten_tomatoes",
        sizes,
        fx["train"],
        data.y["train"],
        fx["val"],
        data.y["val"],
        fx["test"],
        data.y["test"],
        start=init_mlp(sizes, seed),
        info={"data": "int8_net rt data (float embeddings)"},
    )
    config = MethodConfig(
        method="elasticzo-int8",
        task="rotten_tomatoes",
        seed=seed,
        steps=steps,
        batch_size=batch,
        split="full-zo",
        hidden=sizes[1:-1],
        shots=base.shots,
        eval_every=eval_every,
    )
    return train_method(config, task=task)


def backprop_reference(net: str, seed: int, out: Path) -> dict | None:
    """``float_mlp_backprop`` of the net's shape on the seed's data (first-order, L2 and init on validation),
    cached in ``--out/runs/<net>-backprop-s<seed>.json``; None for a net without hidden layers (rt-head: the
    probe is its shape)."""
    hidden = tuple(l.outputs for l in NETS[net][:-1])
    if not hidden:
        return None
    path = out / "runs" / f"{net}-backprop-s{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    r = float_mlp_backprop(load_data(TUNED[net].replace(seed=seed)), hidden)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=1))
    return r


def run(net: str, method: str, seed: int, steps: int | None, out: Path, force: bool) -> dict:
    path = out / "runs" / f"{net}-{method}-s{seed}.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    cfg = int8_config(net, "int8", seed, steps)
    if method.startswith("int8"):
        r = train_int8_net(int8_config(net, method, seed, steps))
    elif method == "float-mezo":
        fcfg = FLOAT_TUNED[net]
        fcfg = FloatMeZOConfig(
            **{
                **fcfg.to_dict(),
                "seed": seed,
                "steps": cfg.steps,
                "batch": cfg.array.batch,
                "eval_every": cfg.eval_every,
            }
        )
        r = train_float_mezo(fcfg)
    else:
        r = elasticzo_run(net, seed, cfg.steps, cfg.array.batch, cfg.eval_every)
        r["curve"] = [{"step": s, "forward_passes": 2 * s, "val_accuracy": v} for s, v in r["val_history"]]
        r["batch"] = cfg.array.batch
    r.setdefault("batch", cfg.array.batch)
    if net != "digits-mlp":
        r.setdefault(
            "float_probe_test_accuracy", float_probe(load_data(cfg.replace(seed=seed)))["float_probe_test_accuracy"]
        )
    r["wall_seconds"] = time.perf_counter() - t0
    r["method_name"] = method
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(r, indent=1, default=float))
    return r


def row(net: str, method: str, r: dict) -> dict:
    out = {k: r.get(k) for k in COLUMNS}
    out.update(net=net, method=method, batch=r.get("batch"))
    for k in (
        "start_accuracy",
        "test_accuracy",
        "final_test_accuracy",
        "best_val_accuracy",
        "float_probe_test_accuracy",
        "float_mlp_backprop_test_accuracy",
    ):
        if out[k] is not None:
            out[k] = round(float(out[k]), 4)
    if out["seconds_per_step"] is not None:
        out["seconds_per_step"] = round(float(out["seconds_per_step"]), 6)
    return out


def plot(net: str, runs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for method, rs in runs.items():
        if not rs:
            continue
        xs = [c["forward_passes"] for c in rs[0]["curve"]]
        ys = np.array([[c["val_accuracy"] for c in r["curve"]][: len(xs)] for r in rs if len(r["curve"]) >= len(xs)])
        (line,) = ax.plot(xs, ys.mean(axis=0), label=f"{LABELS[method]} ({len(ys)} seed{'s' * (len(ys) > 1)})")
        if len(ys) > 1:
            ax.fill_between(xs, ys.min(axis=0), ys.max(axis=0), color=line.get_color(), alpha=0.15)
    probe = [
        r.get("float_probe_test_accuracy") for rs in runs.values() for r in rs if r.get("float_probe_test_accuracy")
    ]
    probe = [p for p in probe if p is not None]
    if probe:
        ax.axhline(float(np.mean(probe)), color="k", ls=":", label="float linear probe (test, mean)")
    bp = [
        r["float_mlp_backprop_test_accuracy"]
        for rs in runs.values()
        for r in rs
        if r.get("float_mlp_backprop_test_accuracy") is not None
    ]
    if bp:
        ax.axhline(float(np.mean(bp)), color="0.4", ls="--", label="same MLP by backprop, float (test, mean)")
    ax.set_xlabel("forward passes (2 per ZO step)")
    ax.set_ylabel("validation accuracy")
    ax.set_title(f"{net}: ZO training at equal forward passes")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_table(rows: list[dict], out: Path) -> None:
    means = []
    for net in dict.fromkeys(r["net"] for r in rows):
        for method in dict.fromkeys(r["method"] for r in rows if r["net"] == net):
            rs = [r for r in rows if r["net"] == net and r["method"] == method]
            m = {"net": net, "method": method, "seed": "mean", "runs": len(rs)}
            for k in (
                "start_accuracy",
                "test_accuracy",
                "final_test_accuracy",
                "float_probe_test_accuracy",
                "float_mlp_backprop_test_accuracy",
                "seconds_per_step",
            ):
                vals = [r[k] for r in rs if r[k] is not None]
                m[k] = round(float(np.mean(vals)), 6 if k == "seconds_per_step" else 4) if vals else None
            m["test_accuracy_min"] = min(r["test_accuracy"] for r in rs)
            means.append(m)
    (out / "accuracy.json").write_text(json.dumps({"runs": rows, "means": means}, indent=1))
    with open(out / "accuracy.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = [
        "| net | method | seed | steps | batch | forward passes | start | test (best val) | final test | "
        "float probe | test - probe (points) | same MLP by backprop | test - backprop (points) | s/step |",
        "|" + "---|" * 14,
    ]

    def fmt(x, pct=True):
        return "" if x is None else (f"{100 * x:.1f}" if pct else f"{x}")

    for r in rows + means:
        gap = (
            f"{100 * (r['test_accuracy'] - r['float_probe_test_accuracy']):+.1f}"
            if r.get("float_probe_test_accuracy") is not None
            else ""
        )
        bp = r.get("float_mlp_backprop_test_accuracy")
        bp_gap = f"{100 * (r['test_accuracy'] - bp):+.1f}" if bp is not None else ""
        seed = f"mean ({r['runs']})" if r["seed"] == "mean" else r["seed"]
        lines.append(
            f"| {r['net']} | {r['method']} | {seed} | {r.get('steps', '') or ''} | {r.get('batch', '') or ''} | "
            f"{r.get('forward_passes', '') or ''} | {fmt(r['start_accuracy'])} | {fmt(r['test_accuracy'])} | "
            f"{fmt(r['final_test_accuracy'])} | {fmt(r['float_probe_test_accuracy'])} | {gap} | {fmt(bp)} | "
            f"{bp_gap} | {r['seconds_per_step']:.4f} |"
        )
    (out / "accuracy.md").write_text(header(rows) + "\n".join(lines) + "\n")


def header(rows: list[dict]) -> str:
    """What produced the table: the command and every method's hyperparameters."""
    nets = list(dict.fromkeys(r["net"] for r in rows))
    text = [
        "# INT8 whole-network ZO: accuracy (issue 15)",
        "",
        "`.venv/bin/python benchmarks/bench_int8_net.py` (runs cached in `runs/`). Accuracies in %; test = at the",
        "best-validation checkpoint (int8-wd: see below); final = after the last step; every method gets the same "
        "steps (2 forward",
        "passes each) and batch; s/step = training step only (2 shared cores). Two references on the same",
        "shots, neither a ZO method: the float linear probe (L2 on validation) and the same MLP shape trained",
        "by backprop (`float_mlp_backprop`: float, biases, Adam, L2 and init chosen on validation) -- how far",
        "exact gradients take the shape.",
        "",
    ]
    for net in nets:
        c = TUNED[net]
        f = FLOAT_TUNED[net]
        text.append(
            f"* **{net}** -- int8: on-chip hinge loss, g_mode {c.g_mode}, g_lr 2^{c.g_lr.bit_length() - 1}, "
            f"margin {c.margin}, eps_shift {c.eps_shift}, batch {c.batch}, {c.steps} steps, "
            f"shifts {'/'.join(str(l.shift) for l in c.net_config.layers[:-1])}, {c.rows}x{c.cols} array, "
            f"init_std {c.init_std:g}, last layer from {c.last_init}"
            f"{f', k = {c.shots}' if net != 'digits-mlp' else ''}; int8-host: lr {c.lr:g}; "
            f"float-mezo: lr {f.lr:g}, eps {f.eps:g}; elasticzo-int8: the methods' defaults "
            "(lr 1, eps 1, r_max 15, p_zero 0.33/0.5/0.9, b_ZO 1, float-CE sign), split full-zo."
            + (
                f" int8-wd: int8 with "
                f"{', '.join(f'{k} {v}' for k, v in TUNED_WD[net].to_dict().items() if v != c.to_dict()[k])}"
                " (the update's integer weight decay w -= round_shift(w, wd_shift) on every wd_every-th step"
                + (
                    "; its test is of the host's mean of the weights at the last "
                    f"{TUNED_WD[net].average_last} validation checkpoints, not of the best-validation checkpoint, "
                    "at the same steps: no extra forward pass"
                    if TUNED_WD[net].average_last
                    else ""
                )
                + "; chosen on validation, `screen/`)."
                if net in TUNED_WD
                else ""
            )
        )
    return "\n".join(text) + "\n\n"


SPEED_METHODS = ("int8", "int8-pregen", "int8-wd", "float-mezo", "elasticzo-int8")
SPEED_NOTE = (
    "Seconds per training step (median over the repeats; evaluation excluded; measured side by side in one run "
    "with the same BLAS threads for every method, on 2 cores shared with other jobs, so absolute figures are "
    "noisy, the ratios less so)."
)


def speed_run(net: str, method: str, seed: int, steps: int) -> float | None:
    """Seconds per step of one fresh (uncached) short run of ``method`` on ``net``; None where the method does not
    apply (int8-wd on a net without a ``TUNED_WD`` preset). Evaluation is excluded by every trainer."""
    if method == "int8-wd" and net not in TUNED_WD:
        return None
    eval_every = max(1, steps // 8)
    if method.startswith("int8"):
        cfg = int8_config(net, method, seed, None).replace(steps=steps, eval_every=eval_every)
        return train_int8_net(cfg, probe=False)["seconds_per_step"]
    batch = TUNED[net].array.batch
    if method == "float-mezo":
        fields = {**FLOAT_TUNED[net].to_dict(), "seed": seed, "steps": steps, "batch": batch, "eval_every": eval_every}
        return train_float_mezo(FloatMeZOConfig(**fields))["seconds_per_step"]
    return elasticzo_run(net, seed, steps, batch, eval_every)["seconds_per_step"]


def measure_speed(nets: list[str], seed: int, steps: int, repeats: int, threads: int) -> list[dict]:
    """Every ``SPEED_METHODS`` method on every net, interleaved ``repeats`` times in one process (so a burst of
    contention hits them alike) with the BLAS pool of every method limited to ``threads``; per net the median
    s/step of each and the INT8 / float MeZO ratios."""
    from threadpoolctl import threadpool_limits

    speed = []
    for net in nets:
        times = {m: [] for m in SPEED_METHODS}
        with threadpool_limits(limits=threads, user_api="blas"):
            for _ in range(repeats):
                for method in SPEED_METHODS:
                    t = speed_run(net, method, seed, steps)
                    if t is not None:
                        times[method].append(t)
        entry = {"net": net, "steps": steps, "repeats": repeats, "blas_threads": threads}
        entry.update({f"{m}_s_per_step": round(float(np.median(v)), 6) for m, v in times.items() if v})
        for m in ("int8", "int8-pregen", "int8-wd"):
            if times[m]:
                key = "int8_over_float_mezo" if m == "int8" else f"{m}_over_float_mezo"
                entry[key] = round(entry[f"{m}_s_per_step"] / entry["float-mezo_s_per_step"], 2)
        print(json.dumps(entry), flush=True)
        speed.append(entry)
    return speed


def write_speed(
    speed: list[dict], out: Path, before: list[dict] | None = None, command: str = "", before_label: str = ""
) -> None:
    """``speed.{json,md}``: this run's entries; with ``before`` (an earlier ``speed.json``, its own run under its own
    contention; ``before_label`` says what it measured) each entry keeps the earlier figures under ``before`` and
    the table shows before -> after."""
    old = {e["net"]: e for e in before or []}
    for e in speed:
        if e["net"] in old:
            e["before"] = {k: v for k, v in old[e["net"]].items() if k != "before"}
    (out / "speed.json").write_text(json.dumps(speed, indent=1))
    cols = [(f"{m}_s_per_step", m) for m in SPEED_METHODS] + [
        ("int8_over_float_mezo", "int8 / float"),
        ("int8-pregen_over_float_mezo", "pregen / float"),
        ("int8-wd_over_float_mezo", "int8-wd / float"),
    ]

    def cell(e: dict, key: str) -> str:
        now = e.get(key, "")
        was = e.get("before", {}).get(key)
        return f"{was} -> {now}" if was is not None and now != "" else f"{now}"

    lines = ["| net | " + " | ".join(label for _, label in cols) + " |", "|---|" + "---|" * len(cols)]
    lines += [f"| {e['net']} | " + " | ".join(cell(e, k) for k, _ in cols) + " |" for e in speed]
    text = (
        SPEED_NOTE + (f"\n\n`{command}`" if command else "") + (f"\n\nbefore: {before_label}" if before_label else "")
    )
    text += "\n\n" + "\n".join(lines) + "\n"
    (out / "speed.md").write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nets", default="digits-mlp,rt-mlp")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--steps", type=int, default=None, help="override every net's step count")
    ap.add_argument("--force", action="store_true", help="re-run cached runs")
    ap.add_argument("--cached-only", action="store_true", help="run nothing: tabulate the cached runs only")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "engine_net")
    ap.add_argument(
        "--speed-steps",
        type=int,
        default=0,
        help="speed only: fresh short runs of this many steps of every speed method side by side (first seed)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="--speed-steps: interleaved repeats (median)")
    ap.add_argument("--before", type=Path, default=None, help="--speed-steps: an earlier speed.json to compare")
    ap.add_argument("--before-label", default="", help="--before: what the earlier run measured (one line in speed.md)")
    ap.add_argument("--threads", type=int, default=1, help="--speed-steps: BLAS threads of every method (default 1)")
    args = ap.parse_args(argv)
    nets = args.nets.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.speed_steps:
        before = json.loads(args.before.read_text()) if args.before else None
        speed = measure_speed(nets, seeds[0], args.speed_steps, args.repeats, args.threads)
        args.out.mkdir(parents=True, exist_ok=True)
        command = "benchmarks/bench_int8_net.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        write_speed(speed, args.out, before, command, args.before_label)
        print((args.out / "speed.md").read_text())
        return 0
    methods = args.methods.split(",")
    for m in methods:
        if m not in METHODS:
            ap.error(f"method must be one of {', '.join(METHODS)}, got {m!r}")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for net in nets:
        runs = {}
        for method in methods:
            runs[method] = []
            for seed in seeds:
                if method in SPOT_CHECK and seed != seeds[0]:
                    continue
                if method == "int8-wd" and net not in TUNED_WD:
                    continue
                if args.cached_only and not (args.out / "runs" / f"{net}-{method}-s{seed}.json").exists():
                    print(f"{net} {method} seed {seed}: not cached, left out", flush=True)
                    continue
                r = run(net, method, seed, args.steps, args.out, args.force and not args.cached_only)
                ref = backprop_reference(net, seed, args.out)
                if ref is not None:
                    r = {**r, **ref}
                print(
                    f"{net} {method} seed {seed}: test {r['test_accuracy']:.3f} (start {r['start_accuracy']:.3f}) "
                    f"{r['seconds_per_step'] * 1e3:.2f} ms/step",
                    flush=True,
                )
                runs[method].append(r)
                rows.append(row(net, method, r))
        plot(net, runs, args.out / f"curves-{net}.png")
    write_table(rows, args.out)
    print((args.out / "accuracy.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
