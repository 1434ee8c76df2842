"""``pezo net``: network files (``pezo.golden.engine.net_file``) and ONNX models.

* ``pezo net show NAME|PATH [--out FILE]`` -- the layer program of a built-in network or a network file; with
  ``--out`` the network file (JSON) of it.
* ``pezo net import MODEL.onnx --data PATH --out FILE`` -- a float ONNX model to a network file, its weights
  quantised to int8 and its shifts calibrated on the data's training split; prints float vs int8 accuracy.
* ``pezo net export NET.json --out MODEL.onnx`` -- a network file with weights as a QDQ ONNX model.

Every file is written whole or not at all; an existing one is replaced only with ``--force``.
"""

from __future__ import annotations

import json
from pathlib import Path

from pezo.cli.args import CLIError
from pezo.cli.net import net_spec


def _load(net: str):
    from pezo.golden.engine.net_file import load_net

    try:
        return load_net(net)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def check_out_file(out: Path | None, force: bool, suffix: str) -> None:
    """``--out FILE``: a ``suffix`` file in an existing directory, not replaced without ``--force``."""
    if out is None:
        return
    if out.suffix.lower() != suffix:
        raise CLIError(f"--out {str(out)!r} must end in {suffix}")
    if out.is_dir():
        raise CLIError(f"--out {str(out)!r} is a directory; name a {suffix} file")
    if not out.parent.is_dir():
        raise CLIError(f"--out {str(out)!r}: its directory {str(out.parent)!r} does not exist")
    if out.exists() and not force:
        raise CLIError(f"--out {str(out)!r} exists; give --force to replace it")


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


def add_parsers(sub) -> None:
    """``net`` with ``show``."""
    p = sub.add_parser(
        "net",
        help="network files and ONNX: 'pezo net show' (a built-in net or a file; --out writes the network file)",
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
