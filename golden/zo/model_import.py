"""A user's ONNX model and data together: the import calibrated on the data's training split, its float vs int8
accuracy per split, and the network file cached by content (``--net MODEL.onnx --data PATH`` in every command and
in ``python -m pezo.driver``).

The import is ``pezo.golden.engine.onnx_import`` (its rule: ``pezo.golden.engine.calibration``); the data
``pezo.golden.zo.user_data`` (the held-out splits follow ``seed``). The cached network file lives in
``cache_dir()/onnx-import/<sha256 of its JSON>/<name>.json``: the same model, data and seed give the same file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pezo.golden.config import cache_dir
from pezo.golden.engine.net_file import NetFile, write_net_file
from pezo.golden.engine.onnx_import import accuracies, import_onnx
from pezo.golden.zo.user_data import check_against_net, read_user_data, user_splits


def import_model(model, data, seed: int = 1, name: str | None = None) -> tuple[NetFile, dict]:
    """The int8 ``NetFile`` of the ONNX ``model`` calibrated on ``data``'s training split, and the report:
    ``input_exponent`` and ``<split>_float_accuracy`` / ``<split>_int8_accuracy`` for train, val and test.
    One ValueError line for a bad model or data."""
    if data is None:
        raise ValueError(f"--net {model} needs --data PATH: the data's training split calibrates the int8 import")
    splits = user_splits(read_user_data(data), seed)
    net, layers = import_onnx(model, splits["train"][0], name=name)
    check_against_net(data, splits, net.config.inputs, net.config.outputs)
    report = {"model": str(model), "data": str(data), "input_exponent": net.input_exponent}
    for split in ("train", "val", "test"):
        for key, value in accuracies(net, layers, *splits[split]).items():
            report[f"{split}_{key}"] = value
    return net, report


def cached_import(model, data, seed: int = 1) -> tuple[Path, dict]:
    """``import_model`` written to the cache (module docstring): the network file's path and the report."""
    net, report = import_model(model, data, seed)
    key = hashlib.sha256(json.dumps(net.to_dict(), sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir() / "onnx-import" / key
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{net.name}.json"
    if not path.exists():
        write_net_file(net, path)
    return path, report
