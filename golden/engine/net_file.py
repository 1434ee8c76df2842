"""The network file (``--net PATH``): a layer program, its engine settings and optionally its int8 weights, in
JSON (or TOML, read only), versioned and strictly checked.

**Format** (``pezo-net`` version 1; ``pezo net show digits-mlp --out net.json`` writes one per built-in net)::

    {"format": "pezo-net", "version": 1, "name": "digits-mlp",
     "layers": [{"inputs": 64, "outputs": 32, "shift": 10, "relu": true, "bias": false, "weight_exponent": -7},
                ...],
     "input_exponent": -7,
     "weights": [[[w00, w01, ...], ...], ...], "biases": [[b0, ...] or null, ...]}

* ``format``, ``version``, ``name``, ``layers``: required. A layer's keys are ``Layer``'s: ``inputs``,
  ``outputs`` (required), ``shift`` (hidden layers' requantisation, 0..31), ``relu``, ``bias``,
  ``weight_exponent`` (one weight LSB is worth 2^weight_exponent; default -7), and ``kind`` (``"dense"``, the
  default). A convolution (``golden.engine.conv.Conv2D``, added compatibly in version 1: a file without one reads
  as before) has ``"kind": "conv"`` and the keys ``in_channels``, ``height``, ``width``, ``out_channels``
  (required), ``kernel`` (3), ``stride`` (1; 1 or 2), ``padding`` (0; up to kernel // 2), ``pool`` (``none``,
  ``max``, ``avg``: 2 x 2), ``shift``, ``relu``, ``bias``, ``weight_exponent``; its ``inputs`` are
  in_channels x height x width (the network's input channel-major, [c][y][x]; a later conv layer's input HWC) and
  its outputs the pooled maps flattened pixel-major, channel-innermost ([y][x][c]; ``golden.engine.conv``), which
  a dense layer after it reads as they are (no Flatten entry).
* ``input_exponent`` (optional): one input LSB is worth 2^input_exponent; user data (``--data``) is quantised
  at it (``pezo.golden.zo.user_data``). Without it the data's own range picks it.
* the array and stream settings (optional; ``NetConfig``'s flat keys ``strategy``, ``rows``, ``cols``,
  ``batch``, ``rng_bits``, ``seed``, ``pool_size``, ``pool_bits``, ``eps_shift``, ``weight_depth``,
  ``lfsr_leap``, ``lfsr_bit_order``): they replace the command's defaults; a command-line option wins.
* ``weights`` (optional): one int8 matrix [outputs][inputs] (entries -127..127) per layer, a conv layer's
  [out_channels][kernel^2 * in_channels] in the lane order (ky, kx, ci) (ONNX's [out, in, kh, kw] kernel
  transposed to [out, kh, kw, in]; the array's pad lanes are not stored: they load as 0 and multiply zero inputs),
  a dense layer after a conv layer's columns over its HWC outputs; ``biases`` (optional): one list of int32 per
  layer (a conv layer: one per output channel), ``null`` for a layer without ``bias``. Or ``weights_file``: an
  ``.npz`` beside the file holding ``w0, w1, ...`` and ``b0, b1, ...`` (the same shapes). A file with weights
  starts training from them; without, the trainer's seeded start is used.
* ``source`` (optional, free text): where the network came from (e.g. the ONNX file it was imported from).

Any other key, a wrong ``format`` or ``version``, a bad layer or a weight of the wrong shape: one ValueError line
naming the file and the key.
"""

from __future__ import annotations

import functools
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pezo.golden.engine.int8 import WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.nets import NET_NAMES, NETS
from pezo.golden.engine.network import NetConfig, NetEngine, layer_from_dict

FORMAT = "pezo-net"
VERSION = 1
SUFFIXES = (".json", ".toml")
SETTING_KEYS = tuple(k for k in NetConfig.JSON_KEYS if k not in ("layers", "name"))
"""The array and stream keys a network file may set (``NetConfig``'s flat keys)."""
LAYER_KEYS = ("inputs", "outputs", "shift", "relu", "bias", "weight_exponent", "kind")
CONV_KEYS = ("kind", "in_channels", "height", "width", "out_channels", "kernel", "stride", "padding", "pool", "shift")
CONV_KEYS += ("relu", "bias", "weight_exponent")
CONV_REQUIRED = ("kind", "in_channels", "height", "width", "out_channels")
REQUIRED_KEYS = ("format", "version", "name", "layers")
OPTIONAL_KEYS = ("input_exponent", "weights", "biases", "weights_file", "source")
FILE_KEYS = REQUIRED_KEYS + OPTIONAL_KEYS + SETTING_KEYS
EXPONENT_RANGE = (-64, 64)


@dataclass(frozen=True)
class NetFile:
    """A network as a file holds it: ``config`` (the layer program with the file's settings over ``NetConfig``'s
    defaults), the ``settings`` the file gave, ``input_exponent`` (or None), per-layer int8 ``weights`` and
    int32 ``biases`` (or None), and ``source``."""

    config: NetConfig
    settings: dict = field(default_factory=dict)
    input_exponent: int | None = None
    weights: tuple | None = None
    biases: tuple | None = None
    source: str = ""

    @property
    def name(self) -> str:
        return self.config.name

    def to_dict(self) -> dict:
        """The file's JSON object (weights inline)."""
        out = {"format": FORMAT, "version": VERSION, "name": self.name}
        out["layers"] = [_layer_dict(layer) for layer in self.config.layers]
        if self.input_exponent is not None:
            out["input_exponent"] = self.input_exponent
        out.update(self.settings)
        if self.source:
            out["source"] = self.source
        if self.weights is not None:
            out["weights"] = [np.asarray(w).astype(int).tolist() for w in _kernels(self.config, self.weights)]
        if self.biases is not None:
            out["biases"] = [None if b is None else np.asarray(b).astype(int).tolist() for b in self.biases]
        return out

    def engine(self, config: NetConfig | None = None) -> NetEngine:
        """A ``NetEngine`` of ``config`` (default: the file's) loaded with the file's weights and biases."""
        config = config or self.config
        weights = config.fit_weights(self.weights) if self.weights is not None else None
        return NetEngine(config, weights=weights, biases=self.biases)


def _non_default(layer, key: str) -> bool:
    return getattr(layer, key) != type(layer).__dataclass_fields__[key].default


def _layer_dict(layer) -> dict:
    """A layer's file object: the required keys and the others where they differ from the default (a dense layer's
    ``kind`` is left out, so files without conv layers are as before)."""
    if layer.kind == "conv":
        return {k: getattr(layer, k) for k in CONV_KEYS if k in CONV_REQUIRED or _non_default(layer, k)}
    return {k: getattr(layer, k) for k in LAYER_KEYS[:-1] if k in ("inputs", "outputs") or _non_default(layer, k)}


def _kernels(config: NetConfig, weights) -> list:
    """The file's weight matrices: a conv layer's rows without the pad lanes ([out_channels, patch])."""
    return [np.asarray(w)[:, : l.patch] if l.kind == "conv" else np.asarray(w) for l, w in zip(config.layers, weights)]


@functools.cache
def builtin_net(name: str) -> NetFile:
    """The built-in network ``name`` (``pezo.golden.engine.nets``) as a ``NetFile`` (the digits nets with their
    input exponent, ``pezo.golden.zo.net_data``'s s_x = -7; the Rotten Tomatoes nets' depends on the data)."""
    if name not in NETS:
        raise ValueError(f"net must be one of {', '.join(NET_NAMES)}, got {name!r}")
    return NetFile(
        NetConfig(layers=NETS[name], name=name), input_exponent=-7 if name in ("digits-mlp", "digits-cnn") else None
    )


def net_file_config(net, **fields) -> NetConfig:
    """``nets.net_config`` for a built-in name or a network file: its layer program with its settings, and
    ``fields`` (the command's options) over them."""
    base = load_net(net)
    return NetConfig.from_dict({**base.config.to_dict(), **fields})


def is_net_path(net) -> bool:
    """Whether ``net`` names a file (a path with a suffix) rather than a built-in network."""
    return isinstance(net, (str, os.PathLike)) and str(net) not in NETS and Path(net).suffix != ""


def load_net(net) -> NetFile:
    """A built-in name or a network file path (``.json``, ``.toml``) -> ``NetFile`` (files cached by path,
    size and modification time)."""
    if isinstance(net, str) and net in NETS:
        return builtin_net(net)
    if not is_net_path(net):
        raise ValueError(
            f"net must be one of {', '.join(NET_NAMES)}, got {net!r} (or a network file: a path ending in "
            f"{' or '.join(SUFFIXES)})"
        )
    path = Path(net)
    if path.suffix.lower() not in SUFFIXES:
        raise ValueError(
            f"net file {str(path)!r} must end in {' or '.join(SUFFIXES)} (an ONNX model is imported first)"
        )
    try:
        stat = path.stat()
    except OSError as exc:
        raise ValueError(f"net file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    return _read_cached(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _read_cached(path: str, size: int, mtime: int) -> NetFile:
    return read_net_file(path)


def read_net_file(path) -> NetFile:
    """Read and check a network file (module docstring); one ValueError line naming the file and the key."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"net file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    parse = json.loads
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            raise ValueError(f"net file {str(path)!r}: reading TOML needs Python 3.11 or later; use JSON") from None
        parse = lambda raw: tomllib.loads(raw.decode())  # noqa: E731
    try:
        data = parse(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"net file {str(path)!r} is not valid {path.suffix[1:].upper()}: {exc}") from None
    try:
        return net_from_dict(data, base=path.parent)
    except ValueError as exc:
        raise ValueError(f"net file {str(path)!r}: {exc}") from None


def net_from_dict(data, base: Path | None = None) -> NetFile:
    """A ``NetFile`` from the file's object (``base``: the directory a ``weights_file`` is relative to)."""
    if not isinstance(data, dict):
        raise ValueError(f"must hold one object with keys {', '.join(REQUIRED_KEYS)}, got {type(data).__name__}")
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (allowed: {', '.join(FILE_KEYS)})")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise ValueError(f"key {missing[0]!r} is missing (required: {', '.join(REQUIRED_KEYS)})")
    if data["format"] != FORMAT:
        raise ValueError(f"key 'format' must be {FORMAT!r}, got {data['format']!r}")
    if data["version"] != VERSION or isinstance(data["version"], bool):
        raise ValueError(f"key 'version' must be {VERSION} (the version this pezo reads), got {data['version']!r}")
    name = data["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > 64 or any(c in name for c in "/\\\n"):
        raise ValueError(f"key 'name' must be a non-empty name of at most 64 characters without '/', got {name!r}")
    layers = _layers(data["layers"])
    settings = {k: data[k] for k in SETTING_KEYS if k in data}
    try:
        config = NetConfig.from_dict({"layers": layers, "name": name, **settings})
    except ValueError as exc:
        raise ValueError(f"key 'layers' or a setting: {exc}") from None
    exponent = data.get("input_exponent")
    if exponent is not None:
        _check_int("input_exponent", exponent, *EXPONENT_RANGE)
    weights, biases = data.get("weights"), data.get("biases")
    if "weights_file" in data:
        if weights is not None or biases is not None:
            raise ValueError("key 'weights_file' replaces 'weights' and 'biases': give one or the other")
        weights, biases = _read_sidecar(data["weights_file"], base or Path("."), len(layers))
    weights = _weights(weights, config) if weights is not None else None
    biases = _biases(biases, config) if biases is not None else None
    if biases is not None and weights is None:
        raise ValueError("key 'biases' needs 'weights' (the biases belong to trained weights)")
    source = data.get("source", "")
    if not isinstance(source, str):
        raise ValueError(f"key 'source' must be text, got {type(source).__name__}")
    return NetFile(config, settings, exponent, weights, biases, source)


def _check_int(key: str, value, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"key {key!r} must be an integer in {lo}..{hi}, got {value!r}")


def _layers(layers) -> tuple:
    if not isinstance(layers, list) or not layers:
        raise ValueError("key 'layers' must be a non-empty list of layer objects")
    out = []
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise ValueError(f"key 'layers[{i}]' must be an object with keys {', '.join(LAYER_KEYS)}")
        kind = layer.get("kind", "dense")
        if kind not in ("dense", "conv"):
            raise ValueError(f"key 'layers[{i}].kind' must be 'dense' or 'conv', got {kind!r}")
        keys, required = (CONV_KEYS, CONV_REQUIRED) if kind == "conv" else (LAYER_KEYS, ("inputs", "outputs"))
        unknown = sorted(set(layer) - set(keys))
        if unknown:
            raise ValueError(f"unknown key 'layers[{i}].{unknown[0]}' (allowed for {kind}: {', '.join(keys)})")
        for key in required:
            if key not in layer:
                raise ValueError(f"key 'layers[{i}].{key}' is missing")
        try:
            out.append(layer_from_dict(layer))
        except ValueError as exc:
            raise ValueError(f"key 'layers[{i}]': {exc}") from None
    return tuple(out)


def _read_sidecar(name, base: Path, count: int) -> tuple[list, list]:
    if not isinstance(name, str) or not name.endswith(".npz") or "/" in name or "\\" in name:
        raise ValueError(f"key 'weights_file' must name an .npz file beside the network file, got {name!r}")
    try:
        with np.load(base / name, allow_pickle=False) as npz:
            arrays = dict(npz)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"key 'weights_file': {name!r} cannot be read as .npz ({exc})") from None
    missing = [f"w{i}" for i in range(count) if f"w{i}" not in arrays]
    if missing:
        raise ValueError(f"key 'weights_file': {name!r} has no array {missing[0]!r} (w0..w{count - 1} needed)")
    return [arrays[f"w{i}"] for i in range(count)], [arrays.get(f"b{i}") for i in range(count)]


def _weights(weights, config: NetConfig) -> tuple:
    if not isinstance(weights, (list, tuple)) or len(weights) != len(config.layers):
        raise ValueError(f"key 'weights' must hold one matrix per layer ({len(config.layers)})")
    out = []
    for i, (layer, w) in enumerate(zip(config.layers, weights)):
        try:
            a = np.asarray(w)
        except ValueError:
            a = np.asarray(0.5)
        shape, what = (layer.outputs, layer.inputs), "outputs x inputs"
        if layer.kind == "conv":
            shape, what = (layer.out_channels, layer.patch), "out_channels x kernel^2 * in_channels"
        if a.shape != shape:
            raise ValueError(f"key 'weights[{i}]' must have shape {list(shape)} ({what}), got {list(a.shape)}")
        if a.dtype.kind not in "iu" or a.min() < WEIGHT_MIN or a.max() > WEIGHT_MAX:
            raise ValueError(f"key 'weights[{i}]' must hold integers in {WEIGHT_MIN}..{WEIGHT_MAX}")
        out.append(a.astype(np.int64))
    return tuple(config.fit_weights(out))


def _biases(biases, config: NetConfig) -> tuple:
    if not isinstance(biases, (list, tuple)) or len(biases) != len(config.layers):
        raise ValueError(f"key 'biases' must hold one list (or null) per layer ({len(config.layers)})")
    out = []
    for i, (layer, b) in enumerate(zip(config.layers, biases)):
        if b is None:
            out.append(None)
            continue
        a = np.asarray(b)
        if not layer.bias:
            raise ValueError(f"key 'biases[{i}]' must be null: layer {i} has \"bias\": false")
        if a.shape != (layer.bias_size,) or a.dtype.kind not in "iu":
            raise ValueError(f"key 'biases[{i}]' must be {layer.bias_size} integers")
        out.append(a.astype(np.int64))
    try:
        NetEngine(config).load_biases(out)
    except ValueError as exc:
        raise ValueError(f"key 'biases': {exc}") from None
    return tuple(out)


def dumps_net(data: dict) -> str:
    """The file's text: one key per line, one layer per line, one weight row per line."""

    def value(key, v) -> str:
        if key in ("weights", "biases", "layers") and isinstance(v, list):
            rows = []
            for item in v:
                if key == "weights":
                    rows.append("  [\n" + ",\n".join("   " + json.dumps(r) for r in item) + "\n  ]")
                else:
                    rows.append("  " + json.dumps(item))
            return "[\n" + ",\n".join(rows) + "\n ]"
        return json.dumps(v)

    return "{\n" + ",\n".join(f" {json.dumps(k)}: {value(k, v)}" for k, v in data.items()) + "\n}\n"


def write_whole(path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all (a temporary file beside it, renamed into place)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_net_file(net: NetFile, path) -> Path:
    """Write ``net`` as JSON to ``path`` whole or not at all (``write_whole``)."""
    return write_whole(path, dumps_net(net.to_dict()))
