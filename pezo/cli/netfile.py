"""``pezo net``: network files (``pezo.golden.engine.net_file``) and ONNX models.

* ``pezo net show NAME|PATH [--out FILE]`` -- the layer program of a built-in network or a network file; with
  ``--out`` the network file (JSON) of it.
* ``pezo net import MODEL.onnx --data PATH --out FILE`` -- a float ONNX model to a network file, its weights
  quantised to int8 and its shifts calibrated on the data's training split; prints float vs int8 accuracy.
* ``pezo net export NET.json --out MODEL.onnx`` -- a network file with weights as a QDQ ONNX model.

Every file is written whole or not at all; an existing one is replaced only with ``--force``
(``pezo.cli.output.check_new_file``).
"""

from __future__ import annotations

import json
from pathlib import Path

from pezo.cli.args import CLIError, raw
from pezo.cli.net import net_spec
from pezo.cli.output import check_new_file


def _load(net: str):
    from pezo.golden.engine.net_file import load_net

    try:
        return load_net(net)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def check_out_file(out: Path | None, force: bool, suffix: str) -> None:
    """``--out FILE``: ``output.check_new_file``'s policy (a ``suffix`` file, replaced only with ``--force``)."""
    check_new_file("--out", out, force, suffix=suffix)


def describe(net) -> dict:
    """The JSON summary of ``pezo net show``."""
    config = net.config
    return {
        "name": net.name,
        "layers": [layer.describe() for layer in config.layers],
        "shifts": [layer.shift for layer in config.layers[:-1]],
        "weight_exponents": [layer.weight_exponent for layer in config.layers],
        "input_exponent": net.input_exponent,
        "inputs": config.inputs,
        "outputs": config.outputs,
        "weights": config.weights,
        "weight_words": config.weight_words,
        "has_weights": net.weights is not None,
        "settings": net.settings,
        "source": net.source,
    }


def cmd_net_show(args) -> int:
    from pezo.golden.engine.net_file import write_net_file

    check_out_file(args.out, args.force, ".json")
    net = _load(args.net)
    info = describe(net)
    if args.out is not None:
        write_net_file(net, args.out)
        info["written"] = str(args.out)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(
        f"{net.name}: {' | '.join(info['layers'])}; {info['weights']} weights "
        f"({info['weight_words']} words of {net.config.array.cols})"
        + ("; int8 weights included" if info["has_weights"] else "")
    )
    if args.out is not None:
        print(f"wrote {args.out}")
    return 0


def import_model(model: str, data: str | None, seed: int = 1, name: str | None = None) -> tuple:
    """``golden.zo.model_import.import_model`` with its errors as one CLI line."""
    from pezo.golden.zo.model_import import import_model as golden_import

    try:
        return golden_import(model, data, seed, name=name)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def print_import(net, report: dict) -> None:
    print(
        f"{net.name}: {' | '.join(l.describe() for l in net.config.layers)}; shifts "
        f"{[l.shift for l in net.config.layers[:-1]]}, weight exponents "
        f"{[l.weight_exponent for l in net.config.layers]}, input exponent {net.input_exponent}"
    )
    print(
        f"  test accuracy: float {report['test_float_accuracy']:.4f}, int8 {report['test_int8_accuracy']:.4f} "
        f"({100 * (report['test_int8_accuracy'] - report['test_float_accuracy']):+.2f} points)"
    )


def cmd_net_import(args) -> int:
    from pezo.golden.engine.net_file import write_net_file

    check_out_file(args.out, args.force, ".json")
    if not str(args.model).lower().endswith(".onnx"):
        raise CLIError(f"MODEL must be an .onnx file, got {args.model!r}")
    seed = args.split_seed
    if isinstance(seed, bool) or not isinstance(seed, int) or not 1 <= seed <= 16383:
        raise CLIError(f"--split-seed must be an integer in 1..16383, got {seed!r}")
    net, report = import_model(args.model, args.data, seed, name=args.name)
    if args.out is not None:
        write_net_file(net, args.out)
        report["written"] = str(args.out)
    if args.json:
        print(json.dumps({**describe(net), "import": report}, indent=2))
        return 0
    print_import(net, report)
    if args.out is not None:
        print(f"wrote {args.out}")
    return 0


def cmd_net_export(args) -> int:
    from pezo.golden.engine.onnx_export import write_onnx

    check_out_file(args.out, args.force, ".onnx")
    if args.out is None:
        raise CLIError("--out MODEL.onnx is required: where to write the exported model")
    net = _load(args.net)
    try:
        write_onnx(net, args.out)
    except ValueError as exc:
        raise CLIError(f"--net: {exc}") from None
    print(f"wrote {args.out} (QDQ int8, {net.config.weights} weights; outputs logits and label)")
    return 0


def add_parsers(sub) -> None:
    """``net`` with ``show``, ``import`` and ``export``."""
    p = sub.add_parser(
        "net",
        help="network files and ONNX: 'pezo net show' (a built-in net or a file; --out writes its file), "
        "'pezo net import' (a float ONNX model to int8) and 'pezo net export' (a network file to QDQ ONNX)",
        description="Network files (JSON, version 1: the layer program, settings and optional int8 weights; "
        "docs: network files) and ONNX import / export.",
    )
    inner = p.add_subparsers(dest="what", metavar="WHAT", parser_class=type(p))
    inner.required = True
    s = inner.add_parser(
        "show",
        help="the layer program of a built-in network or a network file; --out FILE writes its network file",
        description="Print a network's layer program; with --out, write it as a network file (JSON).",
    )
    s.add_argument("net", type=net_spec, metavar="NAME|PATH", help="digits-mlp, rt-mlp, rt-head or a network file")
    s.add_argument("--out", type=Path, help="write the network file (.json) here")
    s.add_argument("--force", action="store_true", help="replace an existing --out file")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.set_defaults(func=cmd_net_show)
    i = inner.add_parser(
        "import",
        help="a float ONNX model (Gemm / MatMul + Add, Relu, Flatten/Reshape) to a network file, int8, calibrated "
        "on --data; prints float vs int8 accuracy",
        description="Import a float ONNX model of dense layers: weights to int8 with one power-of-two exponent per "
        "tensor, requantisation shifts from the activation range on the training split of --data; trailing "
        "Softmax / ArgMax / ZipMap / Cast / Identity are the output. Prints float vs int8 test accuracy.",
    )
    i.add_argument("model", metavar="MODEL.onnx", help="the float ONNX model")
    i.add_argument("--data", metavar="PATH", help="labelled data (.npz or .csv, see pezo train-int8 --data)")
    i.add_argument("--out", type=Path, help="write the network file (.json) here")
    i.add_argument("--name", help="the network's name (default: the ONNX graph's name or the file's)")
    i.add_argument("--split-seed", type=raw, default=1, help="seed of the held-out splits of --data (default 1)")
    i.add_argument("--force", action="store_true", help="replace an existing --out file")
    i.add_argument("--json", action="store_true", help="print one JSON object")
    i.set_defaults(func=cmd_net_import)
    x = inner.add_parser(
        "export",
        help="a network file with int8 weights as a QDQ ONNX model (onnxruntime gives the engine's logits)",
        description="Export a network file with weights (e.g. train-int8 --out's) as a QDQ ONNX model taking the "
        "float input: QuantizeLinear at the input exponent, int8 weights, the engine's shifts; outputs logits "
        "and label.",
    )
    x.add_argument("net", type=net_spec, metavar="PATH", help="a network file with weights")
    x.add_argument("--out", type=Path, help="the .onnx file to write")
    x.add_argument("--force", action="store_true", help="replace an existing --out file")
    x.set_defaults(func=cmd_net_export)
