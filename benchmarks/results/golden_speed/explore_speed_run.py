"""Time ``pezo explore --task digits`` in two worktrees side by side (ABBA rounds after a warm-up of each side).

Usage: ``python explore_speed_run.py OLD_WORKTREE NEW_WORKTREE OUT_DIR RESULT_JSON`` (a worktree with its own
``.venv``). Each run is one process with a fresh ``--out`` (a new study); the wall time is measured around it and
the per-trial seconds are read from its study (``explore.db``). Writes RESULT_JSON: every run, the warm medians and
whether every trial's state, values and reason are equal on both sides.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ARGS = ["explore", "--task", "digits", "--trials", "24", "--jobs", "1", "--quiet", "--json"]
ORDER = [("old", 0), ("new", 0), ("old", 1), ("new", 1), ("new", 2), ("old", 2), ("old", 3), ("new", 3), ("new", 4)]
ORDER += [("old", 4)]
"""Round 0 warms each side (its Yosys cache keys: synth.py's bytes are part of them); rounds 1-4 are ABBA."""


def trial_seconds(worktree: Path, db: Path) -> list[float]:
    code = (
        "import json, optuna, sys; optuna.logging.set_verbosity(optuna.logging.WARNING); "
        "s = optuna.load_study(study_name=None, storage='sqlite:///' + sys.argv[1]); "
        "print(json.dumps([(t.datetime_complete - t.datetime_start).total_seconds() for t in s.trials "
        "if t.datetime_complete]))"
    )
    out = subprocess.run([str(worktree / ".venv/bin/python"), "-c", code, str(db)], capture_output=True, text=True)
    return [round(x, 2) for x in json.loads(out.stdout)] if out.returncode == 0 else []


def comparable(trials: list[dict]) -> list:
    return [(t["number"], t["state"], t["params"], t["values"], t.get("reason")) for t in trials]


def main(old: Path, new: Path, out_dir: Path, result_path: Path) -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    runs, outcomes = {}, {}
    for side, round_ in ORDER:
        worktree = old if side == "old" else new
        out = out_dir / f"{side}-{round_}"
        start = time.perf_counter()
        proc = subprocess.run(
            [str(worktree / ".venv/bin/pezo"), *ARGS, "--out", str(out)],
            cwd=worktree,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"{side}-{round_} failed: {proc.stderr[-2000:]}")
        summary = json.loads(proc.stdout)
        seconds = trial_seconds(worktree, out / "explore.db")
        runs[f"{side}-{round_}"] = {
            "side": side,
            "round": round_,
            "warm_up": round_ == 0,
            "wall_seconds": round(wall, 2),
            "trials_per_minute": round(24 * 60 / wall, 2),
            "trial_seconds": seconds,
            "counts": summary.get("counts"),
        }
        outcomes[f"{side}-{round_}"] = comparable(summary["trials"])
        print(f"{side}-{round_}: {wall:.1f} s, {24 * 60 / wall:.1f} trials/min", flush=True)
    reference = outcomes["old-1"]
    median = {
        side: statistics.median(r["wall_seconds"] for r in runs.values() if r["side"] == side and not r["warm_up"])
        for side in ("old", "new")
    }
    result = {
        "command": "cd WORKTREE && OPENBLAS_NUM_THREADS=1 .venv/bin/pezo " + " ".join(ARGS) + " --out OUT/SIDE-ROUND",
        "order": [f"{s}-{r}" for s, r in ORDER],
        "trial_outcomes_equal_in_every_run": all(o == reference for o in outcomes.values()),
        "median_wall_seconds_warm": median,
        "median_trials_per_minute_warm": {s: round(24 * 60 / m, 2) for s, m in median.items()},
        "new_over_old_trials_per_minute": round(median["old"] / median["new"], 3),
        "runs": runs,
    }
    result_path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main(*(Path(a) for a in sys.argv[1:5]))
