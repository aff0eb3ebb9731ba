"""The numbers behind the widgets of notebooks 05-08 live in numpy modules (examples.py, scaling.py): they import
and compute without matplotlib or ipywidgets, and agree with independent computations written out here."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from attn_helpers.examples import (
    CREATURE_FEATURES,
    CREATURE_QUESTIONS,
    CREATURE_TOKENS,
    SEED,
    combined_mask,
    creature_embeddings,
    creature_example,
    creature_heads_example,
    qkv_attention_steps,
)
from attn_helpers.scaling import (
    NUM_KEYS,
    NUM_QUERIES,
    jacobian_norm,
    query_at_percentile,
    scaling_summary,
    score_sample,
)


def test_the_numpy_modules_import_no_plotting_and_no_widgets():
    code = ("import sys, attn_helpers.examples, attn_helpers.scaling; "
            "bad = [m for m in ('matplotlib', 'ipywidgets', 'IPython') if m in sys.modules]; print(bad)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_creature_embeddings_are_readable():
    X = creature_embeddings()
    assert X.shape == (len(CREATURE_TOKENS), len(CREATURE_FEATURES)) and set(np.unique(X)) <= {0.0, 1.0}
    features = {token: {CREATURE_FEATURES[f] for f in np.flatnonzero(row)} for token, row in zip(CREATURE_TOKENS, X)}
    assert features["creature"] == {"noun", "about the creature", "alive"}
    assert features["verdant"] == {"adjective", "about the forest", "colour"}
    assert features["a"] == features["the"] == {"article"}
    assert len(CREATURE_QUESTIONS) == creature_example()["W_q"].shape[1] == 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_qkv_steps_against_a_loop(dtype):
    ex = creature_example(dtype)
    steps = qkv_attention_steps(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    assert all(array.dtype == dtype for array in steps.values())
    X, W_q, W_k, W_v = (np.asarray(ex[k], np.float64) for k in ("X", "W_q", "W_k", "W_v"))
    T = len(X)
    for i in range(T):
        q = [sum(X[i, f] * W_q[f, c] for f in range(X.shape[1])) for c in range(W_q.shape[1])]
        keys = [[sum(X[j, f] * W_k[f, c] for f in range(X.shape[1])) for c in range(W_k.shape[1])] for j in range(T)]
        s = np.array([sum(a * b for a, b in zip(q, k)) / 2.0 for k in keys])  # sqrt(d_k) = sqrt(4) = 2
        w = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        np.testing.assert_allclose(steps["weights"][i], w, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(steps["context"][i], w @ (X @ W_v), rtol=1e-5, atol=1e-6)


def test_creature_heads_example_is_seeded_and_reuses_the_designed_head():
    a, b = creature_heads_example(), creature_heads_example(seed=SEED)
    for name in ("X", "W_q", "W_k", "W_v", "W_o"):
        np.testing.assert_array_equal(a[name], b[name])
        assert a[name].shape == (8, 8) and a[name].dtype == np.float32
    assert not np.array_equal(creature_heads_example(seed=SEED + 1)["W_o"], a["W_o"])


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("length", [None, -3, 0, 2, 8, 20])
def test_combined_mask_against_a_loop(causal, length):
    T = 8
    real = T if length is None else min(max(length, 0), T)
    expected = np.array([[(j <= i or not causal) and j < real for j in range(T)] for i in range(T)])
    np.testing.assert_array_equal(combined_mask(T, causal=causal, length=length), expected)


def test_scaling_numbers_against_an_independent_sample():
    for d_k in (2, 64, 1024):
        rng = np.random.default_rng([SEED, d_k])
        queries, keys = rng.standard_normal((NUM_QUERIES, 1, d_k)), rng.standard_normal((NUM_QUERIES, NUM_KEYS, d_k))
        scores = np.einsum("nqd,nkd->nk", queries, keys)
        np.testing.assert_allclose(score_sample(d_k), scores, rtol=1e-10)
        summary = scaling_summary(d_k)
        assert summary["unscaled"]["score std"] == pytest.approx(scores.std())
        assert summary["scaled"]["score std"] == pytest.approx(scores.std() / np.sqrt(d_k))
    assert jacobian_norm(np.full(4, 0.25)) == pytest.approx(np.sqrt(1 / 4 - 1 / 16))
    with pytest.raises(ValueError):
        score_sample(64)[0, 0] = 1.0  # cached and read-only
    assert 0 <= query_at_percentile(64, 250) < NUM_QUERIES  # percentiles are clipped to 0..100
