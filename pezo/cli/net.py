"""The ``--net`` side of ``pezo sim engine`` and ``pezo train-int8``: a whole INT8 network on the network
engine (``hw.engine.net_engine``), trained with the on-chip loss or the host's g."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import sys
from pathlib import Path

from pezo.cli.args import CLIError, option_error, raw
from pezo.cli.output import staged_output
from pezo.golden.config import StreamConfig
from pezo.golden.engine.nets import NET_NAMES

LOSS_CHOICES = ("on-chip", "host")
HEAD_ONLY = ("weight_exponent",)
"""Options of the head engine that a --net run does not take."""
NET_ONLY = (
    "loss",
    "g_mode",
    "margin",
    "g_lr",
    "g_shift",
    "no_overlap",
    "wd_shift",
    "wd_every",
    "last_init",
    "hidden_init",
    "split",
    "bp_bits",
    "data",
    "out",
)
NET_TRAIN_OPTIONS = {
    field: "--" + field.replace("_", "-")
    for field in (
        "rows",
        "cols",
        "batch",
        "eps_shift",
        "stream_seed",
        "rng_bits",
        "pool_size",
        "shots",
        "lr",
        "g_mode",
        "margin",
        "g_lr",
        "g_shift",
        "eval_every",
        "steps",
        "lfsr_leap",
        "lfsr_bit_order",
        "wd_shift",
        "wd_every",
        "last_init",
        "hidden_init",
        "split",
        "bp_bits",
    )
} | {"seed": "--split-seed"}
"""NetTrainConfig field -> the option that sets it (its ``seed`` is the data's: ``--split-seed``)."""


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@functools.cache
def net_default(field: str) -> str:
    """The ``--net`` runs' default of ``NetTrainConfig`` field ``field`` for help texts: one value if every
    network has it, else each network's (``digits-mlp 128, rt-mlp 256``)."""
    from pezo.golden.zo.net_config import NetTrainConfig

    values = {name: _shown(NetTrainConfig(net=name).to_dict()[field]) for name in NET_NAMES}
    if len(set(values.values())) == 1:
        return next(iter(values.values()))
    return ", ".join(f"{name} {value}" for name, value in values.items())


def head_and_net_default(head, field: str) -> str:
    """``(default ...)`` of an option of both engines: the head engine's ``head`` and the ``--net`` runs'
    ``NetTrainConfig`` field ``field`` (one value when they agree)."""
    net = net_default(field)
    if net == _shown(head):
        return f"(default {net})"
    return f"(default {_shown(head)} for the head engine, {net} with --net)"


def add_net_args(p: argparse.ArgumentParser, sim: bool) -> None:
    from pezo.golden.engine.loss import G_SHIFT_RANGE, MAX_MARGIN
    from pezo.golden.engine.zo_engine import G_MAX

    p.add_argument(
        "--net",
        type=net_spec,
        metavar="NAME|PATH",
        help="train a whole network on the network engine: digits-mlp "
        "(64-32-32-10), rt-mlp (384-64-2) or rt-head (384-2), a network file (.json/.toml, see pezo net show) "
        "or a float ONNX model (imported and calibrated on --data); without it, the head engine",
    )
    p.add_argument(
        "--data",
        metavar="PATH",
        help="with --net: a labelled data set, .npz (x_train, y_train[, x_val, y_val, x_test, y_test]) or .csv "
        "(a 'label' column); quantised to int8 at one power-of-two exponent (default: the built-in net's data)",
    )
    p.add_argument(
        "--loss",
        choices=LOSS_CHOICES,
        help="with --net: on-chip (the engine's hinge loss and g, "
        "OP_TRAIN; default) or host (the host's cross-entropy g each step)",
    )
    p.add_argument(
        "--g-mode",
        choices=("sign", "scaled"),
        help="with --net --loss on-chip: g = +-g_lr (sign, default) or round_shift(L+ - L-, g_shift) (scaled)",
    )
    p.add_argument(
        "--margin",
        type=raw,
        help=f"with --net: hinge margin in logit LSBs, 0..{MAX_MARGIN} (default {net_default('margin')})",
    )
    p.add_argument(
        "--g-lr", type=raw, help=f"with --net, sign mode: |g| in Q8.16, 1..{G_MAX} (default {net_default('g_lr')})"
    )
    p.add_argument(
        "--g-shift",
        type=raw,
        help=f"with --net, scaled mode: {G_SHIFT_RANGE[0]}..{G_SHIFT_RANGE[1]} (default {net_default('g_shift')})",
    )
    p.add_argument(
        "--wd-shift",
        type=raw,
        help="with --net: the update's integer weight decay "
        "w -= round_shift(w, S), 0..7 (0 = off, the default; the engine's WD_SHIFT register)",
    )
    p.add_argument(
        "--wd-every",
        type=raw,
        help="with --net --wd-shift: decay on every N-th step only (the "
        "engine's WD_EVERY register and decay counter), 1..255 (default 1)",
    )
    p.add_argument(
        "--hidden-init",
        choices=("normal", "pca"),
        help="with --net: the hidden layers' start "
        "directions, normal (w0 ~ N(0, 1), default) or pca (the top width/2 principal directions of "
        "the layer's training inputs and their negatives; no labels), both calibrated",
    )
    from pezo.golden.engine.backprop import BP_BITS_RANGE, DEFAULT_BP_BITS, SPLIT_NAMES

    p.add_argument(
        "--split",
        type=raw,
        help=f"with --net: the elastic trainer's partition: {', '.join(SPLIT_NAMES)} or a layer index C "
        "(ZO on layers 1..C, the engine's integer backprop on the rest; full-zo, the default, is ZO on "
        "every layer, full-bp is backprop alone; digits-cnn's default is cls1, chosen on validation)",
    )
    p.add_argument(
        "--bp-bits",
        type=raw,
        help=f"with --net --split other than full-zo: the backprop tail's update bits (its learning rate), "
        f"{BP_BITS_RANGE[0]}..{BP_BITS_RANGE[1]} (default: the net's and split's, chosen on validation; else "
        f"{DEFAULT_BP_BITS})",
    )
    if not sim:
        p.add_argument(
            "--last-init",
            choices=("zero", "calibrated", "probe"),
            help="with --net: the last layer "
            "starts at zero (default), calibrated, or as the float probe (L2 on validation) on the fixed "
            "hidden features, quantised to int8",
        )
    if not sim:
        p.add_argument(
            "--out",
            type=Path,
            help="with --net: write the trained network to this directory: <name>.json (the network file with the "
            "int8 weights), <name>.onnx (QDQ, onnxruntime gives the engine's predictions) and summary.json",
        )
        p.add_argument("--force", action="store_true", help="with --out: replace a directory pezo wrote before")
    if sim:
        p.add_argument(
            "--no-overlap",
            action="store_true",
            help="with --net: load each batch while the engine waits (the comparison without double buffering)",
        )


def add_net_path_args(p: argparse.ArgumentParser, help_text: str, default: str | None = None) -> None:
    """``--net NAME|PATH`` and ``--data PATH`` (the data an ONNX model's import is calibrated on) of the
    commands that generate or simulate an engine."""
    p.add_argument("--net", type=net_spec, metavar="NAME|PATH", default=default, help=help_text)
    p.add_argument(
        "--data",
        metavar="PATH",
        help="with --net: a labelled data set (.npz or .csv); an ONNX --net is calibrated on its training split",
    )


def net_spec(text: str) -> str:
    """``--net``: a built-in name, or a path (anything with a suffix or a directory part); argparse's
    ``invalid choice`` for any other word."""
    if text in NET_NAMES or "." in text.rsplit("/", 1)[-1] or "/" in text:
        return text
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r} (choose from {', '.join(NET_NAMES)}, or give a network file or ONNX PATH)"
    )


def add_split_seed_arg(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--split-seed`` (the data: split, initial weights, batch order). ``--seed`` names the LFSR / pool master
    seed in ``build`` and ``report``; here it is refused with one line naming both seeds, never reinterpreted."""
    p.add_argument("--split-seed", type=raw, help=help_text)
    p.add_argument("--seed", dest="ambiguous_seed", help=argparse.SUPPRESS)


def check_seed_option(args) -> None:
    """One error for ``--seed`` where it would be ambiguous (see ``add_split_seed_arg``)."""
    if getattr(args, "ambiguous_seed", None) is not None:
        stream = " or --stream-seed (the LFSR / pool master seed)" if hasattr(args, "stream_seed") else ""
        raise CLIError(
            f"--seed is ambiguous here: give --split-seed (the data split, initial weights and batch "
            f"order){stream}; in build and report --seed is the LFSR / pool master seed"
        )


def check_mode(args) -> None:
    """One error for an option that does not apply to the chosen engine."""
    given = lambda name: getattr(args, name, None) not in (None, False)  # noqa: E731
    if args.net is None:
        extra = [n for n in NET_ONLY if given(n)]
        if extra:
            raise CLIError(f"--{extra[0].replace('_', '-')} applies to --net runs only (the network engine)")
    else:
        extra = [n for n in HEAD_ONLY if given(n)]
        if extra:
            raise CLIError(f"--{extra[0].replace('_', '-')} applies to the head engine only (without --net)")


def check_net_options(args, net: str, loss: str) -> None:
    """One error for a --net option that this run would not read (its result would be the same without it):
    --lr outside --loss host, --g-shift / --g-lr in the other --g-mode, --hidden-init on a network without
    hidden layers, --shots on the fixed digits split."""
    from pezo.golden.engine.nets import NETS
    from pezo.golden.zo.net_data import DIGITS_SPLIT, NET_TASKS

    given = lambda name: getattr(args, name, None) is not None  # noqa: E731
    if loss == "on-chip" and given("lr"):
        raise CLIError(
            "--lr applies to --loss host only (MeZO's step on the host's cross-entropy g); with --loss "
            "on-chip (the default) the engine steps by --g-lr (--g-mode sign) or --g-shift (--g-mode "
            "scaled)"
        )
    g_mode = getattr(args, "g_mode", None) or "sign"
    if loss == "on-chip" and g_mode == "sign" and given("g_shift"):
        raise CLIError(
            "--g-shift applies to --g-mode scaled only; --g-mode sign (the default) steps by g = +-g_lr: "
            "set --g-lr, or give --g-mode scaled"
        )
    if loss == "on-chip" and g_mode == "scaled" and given("g_lr"):
        raise CLIError(
            "--g-lr applies to --g-mode sign only; --g-mode scaled steps by g = round_shift(L+ - L-, "
            "g_shift): set --g-shift"
        )
    if getattr(args, "force", False) and getattr(args, "out", None) is None:
        raise CLIError("--force applies with --out DIR only (it lets pezo replace a directory it wrote before)")
    layers = NETS.get(net, ())
    if given("hidden_init") and len(layers) == 1:
        with_hidden = ", ".join(name for name, net_layers in NETS.items() if len(net_layers) > 1)
        raise CLIError(
            f"--hidden-init applies to networks with hidden layers (--net {with_hidden}); {net} "
            f"({layers[0].inputs} -> {layers[0].outputs}) has none"
        )
    if given("shots") and NET_TASKS.get(net) == "digits":
        rt_nets = ", ".join(name for name, task in NET_TASKS.items() if task != "digits")
        raise CLIError(
            f"--shots applies to the Rotten Tomatoes runs (the head engine, --net {rt_nets}); --net {net} "
            f"trains on the fixed digits split ({DIGITS_SPLIT[0]} train, {DIGITS_SPLIT[1]} validation, "
            f"{DIGITS_SPLIT[2]} test examples)"
        )


def net_train_config(args, steps: int | None = None):
    """The ``NetTrainConfig`` of the options (with ``--split``: ``split_config``); one error line per bad field."""
    check_seed_option(args)
    net = resolve_net(args)
    fields = {"net": net, "strategy": args.strategy, **net_file_defaults(net)}
    if getattr(args, "data", None) is not None:
        fields["data"] = args.data
    if args.loss is not None:
        fields["loss"] = args.loss
    for field, option in NET_TRAIN_OPTIONS.items():
        value = getattr(args, option[2:].replace("-", "_"), None) if field != "steps" else steps
        if value is not None:
            fields[field] = value
    check_stream_options(args.strategy, {n: getattr(args, n, None) for n in STREAM_ONLY})
    if fields.get("loss", "on-chip") == "host" and any(
        getattr(args, n, None) is not None for n in ("g_mode", "g_lr", "g_shift")
    ):
        raise CLIError("--g-mode, --g-lr and --g-shift apply to --loss on-chip only")
    check_net_options(args, args.net, fields.get("loss", "on-chip"))
    train = train_config(fields)
    check_options_read(args, train)
    return train


def check_options_read(args, train) -> None:
    """One error for an option that ``train`` (the config as run, its split's defaults included) never reads:
    ``--margin`` with the host's g and no backprop tail, ``--wd-every`` without a decay."""
    if train.loss == "host" and getattr(args, "margin", None) is not None and train.split_c == len(train.layers):
        raise CLIError(
            "--margin applies to --loss on-chip (the engine's hinge loss) or to a --split with a backprop tail (its "
            "error); --loss host with full ZO steps by the host's cross-entropy g and never reads it"
        )
    if getattr(args, "wd_every", None) is not None and train.wd_shift == 0:
        raise CLIError(
            "--wd-every applies with --wd-shift S (1..7): without a decay (--wd-shift 0, the default) it changes "
            "nothing"
        )


STREAM_ONLY = {"pool_size": "pregen", "rng_bits": "otf", "lfsr_leap": "otf", "lfsr_bit_order": "otf"}
"""The stream options that one strategy takes (option field -> the strategy)."""


def check_stream_options(strategy: str | None, given: dict) -> None:
    """One error for a stream option of the other strategy (``given``: option field -> value or None)."""
    for name, only in STREAM_ONLY.items():
        if given.get(name) is not None and strategy != only:
            raise CLIError(f"--{name.replace('_', '-')} applies to --strategy {only} only")


def train_config(fields: dict, options: dict | None = None):
    """The ``NetTrainConfig`` of flat ``fields`` (the net's default split and the split's defaults under them,
    ``split_config``); a bad field is one error in the options' words (``options``: field -> option over
    ``NET_TRAIN_OPTIONS``)."""
    from pezo.golden.zo.net_config import NET_SPLITS, NetTrainConfig, split_config

    net = fields["net"]
    try:
        if "split" not in fields and net in NET_SPLITS:  # the net's own default split (chosen on validation)
            fields["split"] = NET_SPLITS[net]
        if "split" in fields:  # the split's defaults (chosen on validation) under the options given
            return split_config(**fields)
        return NetTrainConfig.from_dict(fields)
    except ValueError as exc:
        named = {**NET_TRAIN_OPTIONS, "strategy": "--strategy", "net": "--net", "loss": "--loss", "data": "--data"}
        raise option_error(exc, {**named, **(options or {})}, fields, NetTrainConfig().to_dict()) from None


def rtl_net_config(train):
    """The ``NetConfig`` the RTL runs for ``train`` (``golden.zo.run.rtl_config``: with a split C < L the engine
    carries its backprop tail); one error for what the RTL cannot run (the host-g loss with a tail, a non-square
    array)."""
    from pezo.golden.zo.run import rtl_config

    try:
        return rtl_config(train)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


NET_FILE_DEFAULTS = ("rows", "cols", "batch") + tuple(
    f.name for f in dataclasses.fields(StreamConfig) if f.name not in ("strategy", "seed")
)
"""A network file's settings that a training run takes as its defaults (an option wins; the file's ``seed`` is
the stream's, ``stream_seed``; its ``strategy`` is build's and report's: training takes ``--strategy``)."""


def net_file_defaults(net: str) -> dict:
    """The run defaults a network file sets (``NET_FILE_DEFAULTS``); {} for a built-in name."""
    from pezo.golden.engine.net_file import is_net_path, load_net

    if not is_net_path(net):
        return {}
    try:
        settings = load_net(net).settings
    except ValueError as exc:
        raise CLIError(f"--net: {exc}") from None
    out = {k: settings[k] for k in NET_FILE_DEFAULTS if k in settings}
    if "seed" in settings:
        out["stream_seed"] = settings["seed"]
    return out


def check_hardware_data(args) -> None:
    """A command that generates hardware reads ``--data`` only to calibrate an ONNX ``--net``: one error
    otherwise (it would be ignored)."""
    data, net = getattr(args, "data", None), getattr(args, "net", None)
    if data is not None and not str(net or "").lower().endswith(".onnx"):
        raise CLIError(
            "--data applies here to an ONNX --net only (its import is calibrated on the data's training split); "
            "this command generates hardware and does not train"
        )


def import_onnx_cached(model: str, data: str | None, args=None) -> str:
    """``--net MODEL.onnx``: the import as a cached network file (``golden.zo.model_import.cached_import``, one
    per model, data and split seed); its report is left on ``args.onnx_import`` for the run's summary."""
    from pezo.golden.zo.model_import import cached_import

    seed = getattr(args, "split_seed", None)
    seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else 1
    try:
        path, report = cached_import(model, data, seed)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args is not None:
        args.onnx_import = report
    return str(path)


def resolve_net(args) -> str:
    """``--net`` as ``NetTrainConfig.net``: a name or a network file as given; an ONNX model imported
    (``pezo.golden.engine.onnx_import``, calibrated on ``--data``) into a network file in the cache."""
    net = args.net
    if net is None or not str(net).lower().endswith(".onnx"):
        return net
    return str(import_onnx_cached(net, getattr(args, "data", None), args))


def check_saturation(result: dict, cause: str) -> None:
    """The integer trainers cannot overflow, they saturate: a run whose g hit the Q8.16 limit in more than half
    of its steps has diverged in the integer sense (the weights are driven to the int8 rails). One line naming
    the first such step and the likely cause, exit 2, instead of a result that looks like training."""
    saturated, steps = result["g_saturated_steps"], result["steps"]
    if 2 * saturated > steps:
        raise CLIError(
            f"training diverged: g hit the Q8.16 limit in {saturated} of {steps} steps (first at step "
            f"{result['g_saturated_first_step']}), driving the int8 weights to their rails; likely "
            f"cause: {cause}"
        )


def _saturation_cause(args, train) -> str:
    if train.loss == "host":
        return f"--lr {train.lr:g} is too large" + ("" if args.lr is not None else " (the default)")
    if train.g_mode == "sign":
        return f"--g-lr {train.g_lr} is too large (its range is 1..8388607, the Q8.16 limit)"
    return f"--g-shift {train.g_shift} is too small"


def trained_net(train, engine, input_exponent: int):
    """The network file of a trained engine: the run's layer program (and the network file's settings), its
    int8 weights and biases (None for a layer without ``bias``), the data's input exponent."""
    from pezo.golden.engine.net_file import NetFile, load_net
    from pezo.golden.engine.network import NetConfig

    base = load_net(train.net)
    config = NetConfig.from_dict({"layers": train.layers, "name": train.net_name, **base.settings})
    biases = tuple(b.copy() if l.bias else None for l, b in zip(config.layers, engine.biases))
    weights = tuple(w.copy() for w in engine.weights)
    return NetFile(config, base.settings, input_exponent, weights, biases, base.source)


def write_trained(folder: Path, net, result: dict) -> list[str]:
    """<name>.json, <name>.onnx and summary.json of a trained network in ``folder``."""
    from pezo.golden.engine.net_file import write_net_file
    from pezo.golden.engine.onnx_export import write_onnx

    names = [f"{net.name}.json", f"{net.name}.onnx", "summary.json"]
    write_net_file(net, folder / names[0])
    write_onnx(net, folder / names[1])
    (folder / names[2]).write_text(json.dumps(result, indent=2) + "\n")
    return names


def cmd_train_int8_net(args, steps) -> int:
    from pezo.golden.zo.int8_net import train_int8_net

    train = net_train_config(args, steps)
    out = getattr(args, "out", None)
    kept = {}
    with contextlib.ExitStack() as stack:
        staging = None
        if out is not None:
            staging = stack.enter_context(staged_output(out, args.force, {"command": "pezo train-int8"}))
        try:
            result = train_int8_net(train, progress=not args.quiet, on_model=lambda e: kept.update(engine=e))
        except ValueError as exc:  # "shots must be in 1..N for task ..." in the option's name
            raise option_error(exc, {"shots": "--shots"}, ("shots",)) from None
        check_saturation(result, _saturation_cause(args, train))
        if getattr(args, "onnx_import", None) is not None:
            result["onnx_import"] = args.onnx_import
        if staging is not None:
            net = trained_net(train, kept["engine"], result["act_exponent"])
            result["written"] = [str(out / name) for name in write_trained(staging.path, net, result)]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    method = "INT8 ZO" if result["split"] == "full-zo" else f"INT8 elastic ZO/BP (split {result['split']})"
    print(
        f"{method} of {train.net_name} ({train.loss} loss, {train.stream.strategy}), {result['steps']} step"
        f"{'s' if result['steps'] != 1 else ''}, split seed {train.seed}",
        file=sys.stdout,
    )
    print(
        f"  test accuracy {result['start_accuracy']:.3f} -> {result['test_accuracy']:.3f} (best validation); "
        f"{result['forward_passes']} forward passes, {1000 * result['seconds_per_step']:.2f} ms/step"
    )
    if "onnx_import" in result:
        r = result["onnx_import"]
        print(
            f"  import of {r['model']}: test accuracy float {r['test_float_accuracy']:.3f}, int8 "
            f"{r['test_int8_accuracy']:.3f}"
        )
    for path in result.get("written", ()):
        print(f"wrote {path}")
    return 0
