"""``pezo quality``: how independent a perturbation family's values are (lag correlations inside one
perturbation) and what that does to the ZO estimator (cosine with the true gradient, norm inflation), beside
the values independent elements would give (``golden.methods.checks.perturbation_quality``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pezo.cli.args import CLIError, add_family_options, option_error, raw
from pezo.cli.output import check_new_file, quoted
from pezo.golden.zo.families import FAMILY_OPTIONS

FAMILIES_OF_OPTION = {
    option: tuple(f for f, opts in FAMILY_OPTIONS.items() if option in opts)
    for options in FAMILY_OPTIONS.values()
    for option in options
}
"""Family option (argparse dest) -> the families that take it (n_rngs: naive-int and pezo-otf)."""
QUALITY_FIELDS = {
    "dim": "--d",
    "queries": "--queries",
    "trials": "--trials",
    "seed": "--seed",
    "max_lag": "--max-lag",
    "family": "--family",
    **{option: "--" + option.replace("_", "-") for option in FAMILIES_OF_OPTION},
}


def quality_families() -> tuple[str, ...]:
    from pezo.golden.methods.xorshift import XorShiftRademacherSampler
    from pezo.golden.zo.families import FAMILIES

    return (*FAMILIES, XorShiftRademacherSampler.family)


def _families(text: str) -> list[str]:
    known = quality_families()
    names = list(known) if text == "all" else [f.strip() for f in text.split(",") if f.strip()]
    bad = [f for f in names if f not in known]
    if bad or not names:
        raise CLIError(
            f"--family must be one of {', '.join(known)}, a comma-separated list of them, or all; got {text!r}"
        )
    return names


def cmd_quality(args) -> int:
    import warnings

    from pezo.golden.methods.checks import perturbation_quality
    from pezo.golden.rng.urng import NearRepeatWarning
    from pezo.golden.zo.families import SpreadLeapWarning

    families = _families(args.family)
    options = {name: getattr(args, name) for name in FAMILIES_OF_OPTION if getattr(args, name) is not None}
    for name, owners in FAMILIES_OF_OPTION.items():
        if name in options and not set(owners) & set(families):
            raise CLIError(f"--{name.replace('_', '-')} applies to --family {' or '.join(owners)} only")
    check_new_file("--plot", args.plot, args.force, suffix=".png")
    check_new_file("--csv", args.csv, args.force, suffix=".csv")
    results = []
    bar = None
    if not args.json and len(families) > 1:
        from tqdm import tqdm

        bar = tqdm(total=len(families), desc="perturbation quality", unit="family", file=sys.stderr)
    for family in families:
        mine = {k: v for k, v in options.items() if family in FAMILIES_OF_OPTION[k]}
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # a power-of-two n_rngs: its warning is not this command's result
                results.append(
                    perturbation_quality(
                        family,
                        dim=args.d,
                        queries=args.queries,
                        trials=args.trials,
                        seed=args.seed,
                        max_lag=args.max_lag,
                        **mine,
                    )
                )
            # shifted copies among the draws are this command's business: one line (the run-length one if any)
            repeats = [str(w.message) for w in caught if issubclass(w.category, NearRepeatWarning)]
            if repeats:
                print(f"pezo: warning: {max(repeats, key=lambda m: 'this run draws' in m)}", file=sys.stderr)
            for message in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, SpreadLeapWarning)):
                print(f"pezo: warning: {message}", file=sys.stderr)
        except ValueError as exc:
            given = {"dim", "queries", "trials", "seed", *mine, *(["max_lag"] if args.max_lag is not None else [])}
            raise option_error(exc, QUALITY_FIELDS, given) from None
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if args.plot is not None:
        plot_lags(results, args.plot)
    if args.csv is not None:
        write_csv(results, args.csv)
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2))
    else:
        print(format_table(results))
    for path in (args.plot, args.csv):
        if path is not None:
            print(f"wrote {quoted(path)}", file=sys.stderr)
    return 0


def _label(r: dict) -> str:
    opts = ", ".join(f"{k}={v}" for k, v in r["options"].items())
    return r["family"] + (f" ({opts})" if opts else "")


TABLE_KEYS = (
    "family",
    "d",
    "queries",
    "trials",
    "max_lag",
    "max_lag_correlation",
    "max_lag_correlation_lag",
    "lag_noise",
    "cosine",
    "cosine_theory",
    "inflation",
    "inflation_theory",
    "inflation_excess",
)


def readable(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, or in scientific notation when that would hide it (``1.30e+15``,
    ``2.00e-05``): for the table only, the JSON keeps the exact numbers."""
    if value != 0 and not 10**-digits <= abs(value) < 1e5:
        return f"{value:.2e}"
    return f"{value:.{digits}f}"


def format_table(results: list[dict]) -> str:
    r0 = results[0]
    lines = [
        f"Perturbation quality at d = {r0['d']}: lag correlations over lags 1..max_lag inside a perturbation "
        f"({r0['lag_perturbations']} perturbations); the RGE with Q = {r0['queries']} on a linear loss "
        f"({r0['trials']} estimates). Theory = independent elements with the family's own moments.",
        "",
        "| family | max abs lag correlation (lag) | noise (3 sigma) | cosine | theory | inflation | theory | excess |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {_label(r)} | {r['max_lag_correlation_signed']:+.3f} ({r['max_lag_correlation_lag']}) | "
            f"{r['lag_noise']:.3f} | {r['cosine']:.3f} | {r['cosine_theory']:.3f} | "
            f"{readable(r['inflation'])} | {readable(r['inflation_theory'])} | "
            f"{_percent(r['inflation_excess'])} |"
        )
    return "\n".join(lines)


def _percent(fraction: float, digits: int = 1) -> str:
    return f"{100 * fraction:+.{digits}f} %" if abs(fraction) < 1e3 else f"{100 * fraction:+.2e} %"


def write_csv(results: list[dict], path: Path) -> None:
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*TABLE_KEYS, "options", "lag_correlations"])
        for r in results:
            writer.writerow(
                [
                    *(r[k] for k in TABLE_KEYS),
                    json.dumps(r["options"]),
                    " ".join(f"{v:g}" for v in r["lag_correlations"]),
                ]
            )


def plot_lags(results: list[dict], path: Path) -> None:
    """Lag correlation against lag, one line per family, with the 3-sigma band of independent values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for r in results:
        lags = range(1, len(r["lag_correlations"]) + 1)
        ax.plot(
            lags,
            r["lag_correlations"],
            marker="o",
            markersize=2.5,
            linewidth=1,
            label=f"{_label(r)}: cosine {r['cosine']:.3f}, inflation {_percent(r['inflation_excess'], 0)}",
        )
    noise = max(r["lag_noise"] for r in results)
    ax.axhspan(-noise, noise, color="grey", alpha=0.25, label="independent values (3 sigma)")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel("lag L (elements apart inside one perturbation)")
    ax.set_ylabel("correlation")
    r0 = results[0]
    ax.set_title(
        f"Perturbation quality: lag correlations at d = {r0['d']} "
        f"(cosine theory {r0['cosine_theory']:.3f} at Q = {r0['queries']})",
        fontsize=10,
    )
    ax.legend(fontsize=7)
    ax.grid(linewidth=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "quality",
        help="how independent a perturbation family's values are (lag correlations) "
        "and what that costs the ZO estimator (cosine, norm inflation) against independent values",
        description="Measures one family (or several, or all): the correlation between elements "
        "1 .. max-lag apart inside one perturbation, and the randomized gradient estimate's cosine "
        "with the true gradient and its norm inflation on a linear loss, beside the values "
        "independent elements with the same moments give.",
    )
    p.add_argument(
        "--family",
        default="pezo-otf",
        help=f"{', '.join(quality_families())}, a comma-separated list, or all (default pezo-otf)",
    )
    p.add_argument("--d", type=raw, default=100, help="perturbation dimension d, 2..16777216 (default 100)")
    p.add_argument("--queries", type=raw, default=100, help="perturbations per estimate Q, 1..65536 (default 100)")
    p.add_argument("--trials", type=raw, default=200, help="estimates, 1..1048576 (default 200)")
    p.add_argument("--seed", type=raw, default=1, help="perturbation seed (default 1)")
    p.add_argument("--max-lag", type=raw, help="largest lag, 1..min(d - 1, 4096) (default 2n: n = --n-rngs or 31)")
    add_family_options(p)
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="also write the lag correlations as a PNG")
    p.add_argument("--csv", type=Path, metavar="FILE.csv", help="also write the table as CSV")
    p.add_argument("--force", action="store_true", help="replace an existing --plot / --csv file")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (a list with several families): "
        "family, d, max_lag_correlation, cosine, cosine_theory, inflation, inflation_theory, "
        "lag_correlations, ...",
    )
    p.set_defaults(func=cmd_quality)
