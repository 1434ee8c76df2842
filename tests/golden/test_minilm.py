"""golden.lm.minilm against a transformers reference (tests/fixtures/minilm), and its read-order contract."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from pezo.golden.lm import jit, minilm
from pezo.golden.lm.minilm import INSTALL_HINT, HiddenCache, MiniLM, ModelPackageMissing, model_dir

REFERENCE = Path(__file__).parents[1] / "fixtures" / "minilm" / "reference.npz"
TEXTS = (
    "A gripping, beautifully shot thriller.",
    "Meh.",
    "Not bad at all, though it drags in the middle.",
    "Markets rallied.",
    "The sequel nobody asked for, made by people who clearly did not care.",
)


@pytest.fixture(scope="module")
def model(minilm) -> MiniLM:
    return minilm


@pytest.fixture(scope="module")
def reference():
    return np.load(REFERENCE)


class RecordingParams(Mapping):
    """A Mapping that logs every key read (as the trainer's lazy perturbed-weight mapping would)."""

    def __init__(self, params):
        self.params, self.log = params, []

    def __getitem__(self, name):
        self.log.append(name)
        return self.params[name]

    def __iter__(self):
        return iter(self.params)

    def __len__(self):
        return len(self.params)


def test_reference_token_ids(model, reference):
    batch = model.tokenize(list(reference["sentences"]))
    assert np.array_equal(batch.ids, reference["ids"])
    assert np.array_equal(batch.mask.sum(1), reference["lengths"])
    assert batch.ids.dtype == np.int64 and batch.mask.dtype == np.float32
    assert batch.ids.shape[1] == 128  # the long sentence is truncated to max_length


def test_reference_embeddings(model, reference):
    emb = model.encode(list(reference["sentences"]))
    assert emb.dtype == np.float32
    err = float(np.abs(emb - reference["embeddings"]).max())
    print(f"max |embedding - transformers| = {err:.3g}")
    assert err < 1e-5
    assert np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-6)


def test_reference_hidden_state(model, reference):
    sentence = str(reference["sentences"][int(reference["hidden_index"])])
    hidden = model.forward(model.tokenize([sentence]))[0]
    err = float(np.abs(hidden - reference["hidden"]).max())
    print(f"max |last hidden - transformers| = {err:.3g}")
    assert hidden.dtype == np.float32 and err < 1e-4


def test_param_order_and_count(model):
    expected = model.embedding_param_names()
    for i in range(6):
        expected += model.layer_param_names(i)
    assert list(model.params) == expected
    assert expected[:5] == [
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
    ]
    assert model.layer_param_names(5)[0] == "encoder.layer.5.attention.self.query.weight"
    assert model.layer_param_names(5)[-1] == "encoder.layer.5.output.LayerNorm.bias"
    assert len(model.params) == 5 + 6 * 16
    assert not any(name.startswith("pooler") for name in model.params)
    assert model.num_params == 22_565_376  # 22.7 M with the (unused, dropped) pooler's 147 840
    assert all(p.dtype == np.float32 and not p.flags.writeable for p in model.params.values())
    assert model.params["encoder.layer.0.intermediate.dense.weight"].shape == (1536, 384)
    with pytest.raises(ValueError, match="layer"):
        model.layer_param_names(6)


def test_config(model):
    cfg = model.config
    assert (
        cfg.hidden_size,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.intermediate_size,
        cfg.layer_norm_eps,
        cfg.head_dim,
    ) == (384, 6, 12, 1536, 1e-12, 32)


def test_each_weight_read_once_in_order(model):
    batch = model.tokenize(TEXTS[:2])
    rec = RecordingParams(model.params)
    model.forward(batch, rec)
    assert rec.log == list(model.params)
    rec.log.clear()
    hidden = model.embed(batch, rec)
    assert rec.log == model.embedding_param_names()
    rec.log.clear()
    model.run_layer(3, hidden, batch.mask, rec)
    assert rec.log == model.layer_param_names(3)
    rec.log.clear()
    model.forward_from(4, hidden, batch.mask, rec)
    assert rec.log == model.layer_param_names(4) + model.layer_param_names(5)


@pytest.mark.parametrize("layer", [0, 4, 6])
def test_forward_from_cache_matches_encode(model, layer):
    cache = model.hidden_states(TEXTS, layer, batch_size=2)
    assert isinstance(cache, HiddenCache) and cache.layer == layer and cache.n_texts == len(TEXTS)
    assert sorted(np.concatenate([b.indices for b in cache]).tolist()) == list(range(len(TEXTS)))
    pooled = np.zeros((len(TEXTS), 384), dtype=np.float32)
    for b in cache:
        assert b.hidden.shape == b.mask.shape + (384,)
        pooled[b.indices] = model.forward_from(layer, b.hidden, b.mask)
    expected = model.encode(TEXTS, batch_size=3, normalize=False)
    assert np.abs(pooled - expected).max() < 1e-5
    assert np.abs(minilm.l2_normalize(pooled) - model.encode(TEXTS)).max() < 1e-5


def test_padding_invariance(model):
    short, long = TEXTS[1], TEXTS[4]
    alone = model.encode([short], batch_size=1)
    padded_batch = model.tokenize([short, long])
    assert padded_batch.mask[0].sum() < padded_batch.mask.shape[1]
    pooled = model.mean_pool(model.forward(padded_batch), padded_batch.mask)
    assert np.abs(minilm.l2_normalize(pooled[:1]) - alone).max() < 1e-5


def test_encode_keeps_input_order(model):
    one_by_one = np.concatenate([model.encode([t]) for t in TEXTS])
    assert np.abs(model.encode(TEXTS, batch_size=2) - one_by_one).max() < 1e-5


def test_progress_bar_on_stderr(model, capsys):
    model.encode(TEXTS[:2], progress=True)
    captured = capsys.readouterr()
    assert "encode" in captured.err and captured.out == ""


def test_missing_package_names_the_fix(monkeypatch):
    monkeypatch.setattr(minilm, "_package_dir", lambda: None)
    with pytest.raises(ModelPackageMissing, match=re.escape(INSTALL_HINT)):
        model_dir()
    with pytest.raises(ModelPackageMissing, match=re.escape(INSTALL_HINT)):
        MiniLM()


def test_missing_model_files_name_the_fix(monkeypatch, tmp_path):
    (tmp_path / "model").mkdir()
    monkeypatch.setattr(minilm, "_package_dir", lambda: tmp_path)
    with pytest.raises(ModelPackageMissing, match=re.escape(INSTALL_HINT)):
        model_dir()


def test_compiled_kernels_give_the_numpy_passes_forward_and_encode_bit_for_bit(model, monkeypatch):
    if jit.kernels() is None:
        pytest.skip(f"compiled kernels unavailable: {jit.status()}")
    batch = model.tokenize(TEXTS)
    compiled = model.forward(batch), model.encode(TEXTS, batch_size=2)
    monkeypatch.setenv(jit.ENV_DISABLE, "1")
    numpy_passes = model.forward(batch), model.encode(TEXTS, batch_size=2)
    for got, want in zip(compiled, numpy_passes):
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
