"""MeZO: memory-efficient zeroth-order SGD (Malladi et al., 2023), with any perturbation family.

Contract
--------
* The trainable weights are an ordered list of float32 tensors (``TrainableLayout``); their
  concatenation in that order is the perturbation vector of dimension d, the order the hardware
  streams weights in. ``sampler.segment(index, offset, size)`` (``pezo.golden.zo.families``) gives the slice of
  perturbation number ``index`` that lands on a tensor.
* A step uses ``queries`` perturbations, numbers ``index = step * queries + i`` (MeZO's per-step
  seed; for the PeZO families it is the hardware's perturbation counter). For each one:
  ``l+ = L(theta + eps z)``, ``l- = L(theta - eps z)``, projected gradient ``g = (l+ - l-) / (2 eps)``
  (computed in float64 from the float32 losses).
* Update (MeZO's rule, weight decay skipped for biases and LayerNorm as MeZO does)::

      u = sum_i (g_i / q) * z_i  [+ weight_decay * theta]        (float32, queries in order)
      theta <- theta - lr * u

* ``mode="inplace"`` is MeZO exactly: the step perturbs theta in place by +eps z, then -2 eps z, then
  +eps z, regenerating z from the index each time (no copy of the weights), so theta after the
  three perturbations equals the original only up to float32 rounding -- as in MeZO.
  ``mode="stream"`` is what the FPGA does: the forward pass reads ``theta +- eps z`` tensor by tensor
  (materialised on read, one tensor at a time) and never writes a perturbed weight, so there is no
  drift.
* Speed (results unchanged): perturbations and updates walk each tensor in pieces of ``CHUNK`` values, drawing z
  piece by piece from ``sampler.stream`` (the same values as ``segment``) so z, the products and the weights' piece
  stay in cache and no tensor-sized temporary is made; the per-element float32 operations and their order are
  the ones written above, so the results do not depend on the piece size. With ``threads`` > 1 (default: as many
  as BLAS may use, ``pezo.golden.threads``; 1 below ``PARALLEL_MIN_DIM`` trainable values) the tensors are shared
  among that many threads (NumPy's generators and ufuncs release the GIL); each tensor is one thread's, so the
  results do not depend on the thread count either.
* Memory for time (``keep_z``): NumPy's float32 normal draw costs about as much as the rest of
  a perturbation, so the first ``perturb`` of an index draws a kept tensor's z into that tensor's buffer (4 bytes
  per value, allocated once) and the -2 perturbation, the restore and the update of that index read it instead of
  drawing it again: one draw per query instead of three (q = 1: one instead of three per step; q > 1: 2q - 1
  instead of 4q - 1, only the current perturbation is kept). In stream mode ``losses`` draws the kept tensors' z
  once (one generator per tensor instead of one per tensor, view and update: on small nets such as digits the
  generators' set-up, not the draw, was most of a step) and both views and the update read it. The values read are
  the ones a draw gives, and the float32 operations and their order are unchanged, so theta is bit for bit the
  same with it on or off (``tests/golden/test_mezo_keep_z.py``). ``"auto"`` (default) keeps at most
  ``KEEP_Z_AUTO_BYTES`` = 64 MiB of z, tensor by tensor in stream order (the tensors that fit): all of MiniLM's
  head and lastN for any N (last6: 10.7 M values = 43 MB); of ``all`` (22.6 M values = 90 MB, a second copy of the
  weights MeZO exists to avoid) 16.7 M values (67 MB, the embeddings and layers 0-1 and part of 2); ``"always"``
  keeps every tensor's, ``"never"`` none.
* Replay: ``replay`` applies the recorded (index, projected gradient) pairs -- and in ``inplace`` mode
  the same three perturbations -- through the same code path, so it rebuilds the trained weights bit
  for bit from the starting weights (``tests/golden/test_mezo.py``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pezo.golden.threads import blas_threads, run_all

MODES = ("inplace", "stream")
KEEP_Z = ("auto", "always", "never")
KEEP_Z_AUTO_BYTES = 64 << 20
"""``keep_z="auto"`` keeps the current perturbation's z when its float32 values take at most this many bytes."""
CHUNK = 1 << 15
"""Values per piece of a tensor in perturb / update (128 KiB of float32: a few such pieces fit in L2)."""
PARALLEL_MIN_DIM = 1 << 18
"""Below this many trainable values a step stays on one thread (a thread hand-off costs more than it saves)."""


def no_decay(name: str) -> bool:
    """MeZO's rule: no weight decay on biases and LayerNorm parameters."""
    lower = name.lower()
    return "bias" in lower or "layer_norm" in lower or "layernorm" in lower


@dataclass(frozen=True)
class MeZOConfig:
    """lr (> 0), eps (> 0, perturbation scale), queries q (1..1024, perturbations per step),
    weight_decay (>= 0, MeZO's rule), mode (``MODES``), keep_z (``KEEP_Z``: keep the current perturbation's z between
    its uses, a memory-for-time trade that leaves every result unchanged; see the module docstring)."""

    lr: float = 1e-4
    eps: float = 1e-3
    queries: int = 1
    weight_decay: float = 0.0
    mode: str = "inplace"
    keep_z: str = "auto"

    def __post_init__(self):
        for name in ("lr", "eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        wd = self.weight_decay
        if isinstance(wd, bool) or not isinstance(wd, (int, float)) or not np.isfinite(wd) or wd < 0:
            raise ValueError(f"weight_decay must be a finite number >= 0, got {wd!r}")
        if isinstance(self.queries, bool) or not isinstance(self.queries, int) or not 1 <= self.queries <= 1024:
            raise ValueError(f"queries must be an integer in 1..1024, got {self.queries!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not isinstance(self.keep_z, str) or self.keep_z not in KEEP_Z:
            raise ValueError(f"keep_z must be one of {', '.join(KEEP_Z)}, got {self.keep_z!r}")


@dataclass(frozen=True)
class TrainableLayout:
    """The trainable tensors in stream order: names, shapes, flat offsets; ``dim`` = d."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    dim: int

    @classmethod
    def of(cls, params: Mapping[str, np.ndarray], names: Sequence[str]) -> TrainableLayout:
        names = tuple(names)
        if not names:
            raise ValueError("trainable must name at least one parameter")
        missing = [n for n in names if n not in params]
        if missing:
            raise ValueError(f"trainable names unknown parameters: {', '.join(missing[:5])}")
        if len(set(names)) != len(names):
            raise ValueError("trainable names a parameter twice")
        shapes = tuple(tuple(params[n].shape) for n in names)
        offsets, total = [], 0
        for shape in shapes:
            offsets.append(total)
            total += int(np.prod(shape, dtype=np.int64))
        return cls(names, shapes, tuple(offsets), total)

    def size(self, i: int) -> int:
        return int(np.prod(self.shapes[i], dtype=np.int64))


@dataclass(frozen=True)
class StepRecord:
    """What a step needs to be replayed: its perturbation indices and projected gradients."""

    step: int
    indices: tuple[int, ...]
    projected_grads: tuple[float, ...]
    loss: float  # mean of l+ and l- over the queries (float64)


class PerturbedView(Mapping):
    """``theta + coef * z`` for the trainable tensors, materialised on read (stream mode); ``z_of(i)`` is trainable
    tensor ``i``'s flat z (the kept one or a fresh segment)."""

    def __init__(
        self, params: Mapping[str, np.ndarray], layout: TrainableLayout, z_of: Callable[[int], np.ndarray], coef: float
    ):
        self._params, self._z_of, self._coef = params, z_of, np.float32(coef)
        self._where = {name: i for i, name in enumerate(layout.names)}

    def __getitem__(self, name: str) -> np.ndarray:
        base = self._params[name]
        i = self._where.get(name)
        if i is None:
            return base
        return base + (self._coef * self._z_of(i)).reshape(base.shape)  # z may be a view of a table or kept buffer

    def __iter__(self):
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)


class MeZO:
    """The optimiser over ``params`` (a dict, updated in place) restricted to ``names``."""

    def __init__(
        self,
        params: dict[str, np.ndarray],
        names: Sequence[str],
        sampler,
        config: MeZOConfig,
        threads: int | None = None,
    ):
        """``threads``: threads for perturb / update (None: ``blas_threads()``, or 1 below ``PARALLEL_MIN_DIM``
        trainable values); the results are the same for any count."""
        if not isinstance(config, MeZOConfig):
            raise ValueError(f"config must be a MeZOConfig, got {type(config).__name__}")
        self.params, self.config, self.sampler = params, config, sampler
        self.layout = TrainableLayout.of(params, names)
        if sampler.dim != self.layout.dim:
            raise ValueError(f"sampler dim {sampler.dim} != trainable dimension {self.layout.dim}")
        for name in self.layout.names:
            if params[name].dtype != np.float32:
                raise ValueError(f"parameter {name} must be float32, got {params[name].dtype}")
        self.decay = tuple(not no_decay(n) for n in self.layout.names)
        if threads is None:
            threads = blas_threads() if self.layout.dim >= PARALLEL_MIN_DIM else 1
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
        self.threads = threads
        sizes = [self.layout.size(i) for i in range(len(self.layout.names))]
        self._sizes = tuple(sizes)
        self._order = tuple(sorted(range(len(sizes)), key=lambda i: -sizes[i]))  # largest first: balanced threads
        self._local = threading.local()  # each thread's scratch pieces
        self.kept_tensors = self._tensors_to_keep()
        """Per trainable tensor: whether its z of the current perturbation is kept (``MeZOConfig.keep_z`` resolved)."""
        self.keeps_z = any(self.kept_tensors)
        self.kept_z_bytes = 4 * sum(size for size, kept in zip(sizes, self.kept_tensors) if kept)
        self._kept: tuple[np.ndarray | None, ...] | None = None  # each kept tensor's z of perturbation _kept_index
        self._kept_index: int | None = None

    def _tensors_to_keep(self) -> tuple[bool, ...]:
        """``keep_z`` per tensor: all (``always``), none (``never``), or (``auto``) the tensors in stream order
        whose z fits what is left of ``KEEP_Z_AUTO_BYTES`` (every tensor when the whole z fits)."""
        if self.config.keep_z == "never":
            return (False,) * len(self._sizes)
        if self.config.keep_z == "always":
            return (True,) * len(self._sizes)
        left, keep = KEEP_Z_AUTO_BYTES, []
        for size in self._sizes:
            keep.append(4 * size <= left)
            left -= 4 * size if keep[-1] else 0
        return tuple(keep)

    def _kept_buffers(self) -> tuple[np.ndarray | None, ...]:
        """Each kept tensor's z buffer (allocated on first use), None for the others."""
        if self._kept is None:
            self._kept = tuple(
                np.empty(size, dtype=np.float32) if kept else None for size, kept in zip(self._sizes, self.kept_tensors)
            )
        return self._kept

    def _pieces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This thread's three float32 scratch pieces of ``CHUNK`` values (made on first use)."""
        pieces = getattr(self._local, "pieces", None)
        if pieces is None:
            size = min(CHUNK, max(self._sizes))
            pieces = self._local.pieces = tuple(np.empty(size, dtype=np.float32) for _ in range(3))
        return pieces

    def _each_tensor(self, work: Callable[[int, np.ndarray], None]) -> None:
        """``work(i, flat)`` for every trainable tensor, ``flat`` its 1-D writeable view (a non-contiguous tensor
        is worked on in a copy written back), on ``threads`` threads."""

        def run(i: int) -> None:
            theta = self.params[self.layout.names[i]]
            flat = theta.reshape(-1)  # a view when theta is C-contiguous, else a copy
            work(i, flat)
            if not theta.flags.c_contiguous:
                theta[...] = flat.reshape(theta.shape)

        run_all([functools.partial(run, i) for i in self._order], self.threads)

    # -- perturbations ------------------------------------------------------------------------
    def _z(self, index: int, i: int) -> np.ndarray:
        z = self.sampler.segment(index, self.layout.offsets[i], self.layout.size(i))
        return z.reshape(self.layout.shapes[i])

    def _stream(self, index: int, i: int):
        return self.sampler.stream(index, self.layout.offsets[i], self._sizes[i])

    def _z_reader(self, index: int, i: int, into_kept: bool) -> Callable[[int, np.ndarray], np.ndarray]:
        """``read(start, out)``: tensor ``i``'s values ``start .. start + len(out)`` of z(``index``), called with
        consecutive pieces: the kept z when it is ``index``'s, else drawn into ``out`` (into the kept buffer with
        ``into_kept``); returns the values (``out`` or a view of the kept buffer)."""
        kept = self._kept[i] if self._kept is not None else None
        if kept is not None and self._kept_index == index:
            return lambda start, out: kept[start : start + out.shape[0]]
        stream = self._stream(index, i)
        if into_kept and kept is not None:
            return lambda start, out: stream.read(kept[start : start + out.shape[0]])
        return lambda start, out: stream.read(out)

    def perturb(self, index: int, scale: float) -> None:
        """theta += scale * eps * z(index), tensor by tensor, in place (MeZO's ``zo_perturb_parameters``); with
        ``kept_tensors`` the z of a new index is kept for the next perturbations and the update of that index."""
        coef = np.float32(scale * self.config.eps)
        drawing = self.keeps_z and self._kept_index != index
        if drawing:
            self._kept_buffers()
            self._kept_index = None  # until every tensor's buffer holds z(index)

        def work(i: int, theta: np.ndarray) -> None:
            read, buffer = self._z_reader(index, i, into_kept=drawing), self._pieces()[0]
            for start in range(0, theta.size, CHUNK):
                piece = theta[start : start + CHUNK]
                step = buffer[: piece.size]
                piece += np.multiply(read(start, step), coef, out=step)  # coef * z

        self._each_tensor(work)
        if drawing:
            self._kept_index = index

    def keep(self, index: int) -> None:
        """Draw z(``index``) of the kept tensors into their buffers (stream mode: once per index, for both views
        and the update); nothing when they hold it already or no tensor is kept."""
        if not self.keeps_z or self._kept_index == index:
            return
        self._kept_index = None  # until every tensor's buffer holds z(index)
        kept = self._kept_buffers()

        def draw(i: int) -> None:
            self._stream(index, i).read(kept[i])

        run_all([functools.partial(draw, i) for i in self._order if kept[i] is not None], self.threads)
        self._kept_index = index

    def view(self, index: int, scale: float) -> PerturbedView:
        """theta + scale * eps * z(``index``), materialised on read; the kept z when ``keep`` drew it for ``index``."""

        def z_of(i: int) -> np.ndarray:
            if self._kept_index == index and self._kept[i] is not None:
                return self._kept[i]
            return self.sampler.segment(index, self.layout.offsets[i], self._sizes[i])

        return PerturbedView(self.params, self.layout, z_of, scale * self.config.eps)

    # -- one step -------------------------------------------------------------------------------
    def losses(
        self, index: int, loss_fn: Callable[[Mapping[str, np.ndarray]], float], restore: bool = True
    ) -> tuple[float, float]:
        """(l+, l-) of perturbation ``index``; in inplace mode theta is perturbed and restored (+1, -2, +1), the
        restore left to the caller with ``restore=False`` (theta stays at -eps z: ``update(restore_last=True)``)."""
        if self.config.mode == "stream":
            self.keep(index)
            return float(loss_fn(self.view(index, 1.0))), float(loss_fn(self.view(index, -1.0)))
        self.perturb(index, 1.0)
        plus = float(loss_fn(self.params))
        self.perturb(index, -2.0)
        minus = float(loss_fn(self.params))
        if restore:
            self.perturb(index, 1.0)
        return plus, minus

    def step(self, step: int, loss_fn: Callable[[Mapping[str, np.ndarray]], float]) -> StepRecord:
        """One MeZO step (``queries`` perturbations, then the update); returns its replay record."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step must be an integer >= 0, got {step!r}")
        q, eps = self.config.queries, self.config.eps
        indices = tuple(step * q + i for i in range(q))
        grads, total = [], 0.0
        fuse = self.config.mode == "inplace"  # the last restore is done by the update, with the z it draws anyway
        for index in indices:
            plus, minus = self.losses(index, loss_fn, restore=not (fuse and index == indices[-1]))
            grads.append((np.float64(plus) - np.float64(minus)) / (2.0 * eps))
            total += plus + minus
        record = StepRecord(step, indices, tuple(float(g) for g in grads), total / (2 * q))
        self.update(record, restore_last=fuse)
        return record

    def update(self, record: StepRecord, restore_last: bool = False) -> None:
        """theta <- theta - lr * (sum_i g_i/q z_i [+ wd theta]) for every trainable tensor; with ``restore_last``
        first theta += eps z of the last index (the inplace restore ``losses(restore=False)`` left out), tensor by
        tensor with the same z: the same float32 operations on each tensor as restoring and then updating, one z
        drawn fewer (none for the index ``keeps_z`` holds)."""
        q = len(record.indices)
        lr, wd = np.float32(self.config.lr), np.float32(self.config.weight_decay)
        coefs = [np.float32(g / q) for g in record.projected_grads]
        restore = np.float32(1.0 * self.config.eps)

        def work(i: int, theta: np.ndarray) -> None:
            readers = [self._z_reader(index, i, into_kept=False) for index in record.indices]
            decay = bool(self.decay[i] and wd)
            u_buf, term_buf, last_buf = self._pieces()
            for start in range(0, theta.size, CHUNK):
                piece = theta[start : start + CHUNK]
                n = piece.size
                u, term = u_buf[:n], term_buf[:n]
                z_last = readers[-1](start, last_buf[:n]) if restore_last else None
                if restore_last:
                    piece += np.multiply(z_last, restore, out=term)
                for k, (read, coef) in enumerate(zip(readers, coefs)):
                    z = z_last if restore_last and k == q - 1 else read(start, term)
                    if k == 0:
                        np.multiply(z, coef, out=u)
                    else:
                        u += np.multiply(z, coef, out=term)
                if decay:
                    u += np.multiply(piece, wd, out=term)
                piece -= np.multiply(u, lr, out=u)

        self._each_tensor(work)

    def replay(self, records: Sequence[StepRecord]) -> None:
        """Re-apply recorded steps to ``params`` (which must hold the starting weights): the same
        perturbations (inplace mode) and updates, bit for bit, with no forward pass."""
        for record in records:
            if self.config.mode == "inplace":
                for index in record.indices:
                    self.perturb(index, 1.0)
                    self.perturb(index, -2.0)
                    self.perturb(index, 1.0)
            self.update(record)
