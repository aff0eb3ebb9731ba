"""Real pretrained word vectors, offline: a 20,000-word subset of GloVe 6B, 50 dimensions (numpy only).

``attn_helpers/data/glove_6b_50d_top20k.npz`` (about 2 MB). GloVe: Pennington, Socher and Manning, 2014; the
vectors are under the ODC Public Domain Dedication and License v1.0 (see ``attn_helpers/data/GLOVE_README.md``).

>>> words, vectors = load_glove()
>>> vectors.shape, vectors.dtype, words[0]
((20000, 50), dtype('float32'), 'the')
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["GLOVE_FILE", "load_glove", "word_to_index", "most_similar", "pca_2d"]

#: The data file inside the package (built by ``tools/build_glove_subset.py``).
GLOVE_FILE = "glove_6b_50d_top20k.npz"


def _data_path():
    return resources.files("attn_helpers") / "data" / GLOVE_FILE


@lru_cache(maxsize=1)
def _load():
    path = _data_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"the GloVe subset {GLOVE_FILE!r} is missing from attn_helpers/data/. It ships with the repository; "
            "restore it with `git checkout -- attn_helpers/data`, or rebuild it with tools/build_glove_subset.py "
            "(see the instructions at the top of that script)"
        )
    with path.open("rb") as handle, np.load(handle) as data:
        words = tuple(str(word) for word in data["words"])
        vectors = data["vectors"].astype(np.float32)  # stored as float16 to halve the file
    vectors.flags.writeable = False  # one cached table shared by every caller: nobody may change it
    return words, vectors


def load_glove():
    """The GloVe subset: 20,000 frequent English words and their 50-dimensional vectors.

    Words are in GloVe's frequency order ("the" first); row ``i`` of ``vectors`` is the vector
    of ``words[i]``. Loaded once, then cached; the array is read-only (copy it to change it).

    Returns ``vectors (N, 50)``: ``N = 20000``.

    >>> words, vectors = load_glove()
    >>> len(words), vectors.shape
    (20000, (20000, 50))
    >>> vectors[words.index("king")][:3].round(2)
    array([ 0.5 ,  0.69, -0.6 ], dtype=float32)
    """
    return _load()


@lru_cache(maxsize=1)
def _index():
    words, _ = _load()
    return {word: i for i, word in enumerate(words)}


def word_to_index():
    """A dict ``{word: row}`` for :func:`load_glove`'s table (cached; do not modify it).

    >>> index = word_to_index()
    >>> index["the"], "apple" in index, "xyzzy" in index
    (0, True, False)
    """
    return _index()


def most_similar(query, vectors, k=10, metric="cosine", exclude=()):
    r"""The ``k`` rows of ``vectors`` most similar to ``query``, best first.

    .. math:: \text{dot: } s_i = v_i \cdot q \qquad
              \text{cosine: } s_i = \frac{v_i \cdot q}{\lVert v_i\rVert\,\lVert q\rVert}

    ``query (d,)``; ``vectors (N, d)``; ``k``: how many rows to return (at most ``N - len(exclude)``); ``exclude``:
    rows never returned (for example the query word itself). Returns ``rows (k,)``; ``scores (k,)``: the similarity of
    each returned row, in decreasing order.

    >>> table = np.array([[1.0, 0.0], [3.0, 1.0], [0.0, 2.0]])
    >>> most_similar([1.0, 0.0], table, k=2, metric="dot")
    (array([1, 0]), array([3., 1.]))
    >>> rows, scores = most_similar([1.0, 0.0], table, k=2, metric="cosine")
    >>> rows, scores.round(3)
    (array([0, 1]), array([1.   , 0.949]))
    """
    if metric not in ("cosine", "dot"):
        raise ValueError(f"metric must be 'cosine' or 'dot', got {metric!r}")
    query = np.asarray(query, dtype=np.float32)
    vectors = np.asarray(vectors, dtype=np.float32)
    if query.ndim != 1 or vectors.ndim != 2 or vectors.shape[1] != query.shape[0]:
        raise ValueError(f"query must have shape (d,) and vectors shape (N, d); got query {query.shape}, "
                         f"vectors {vectors.shape}")
    scores = vectors @ query  # (N, d) @ (d,) -> (N,)
    if metric == "cosine":
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)  # (N,)
        scores = np.divide(scores, norms, out=np.zeros_like(scores), where=norms > 0)
    scores = scores.astype(np.float64)
    excluded = np.asarray(list(exclude), dtype=int)
    if excluded.size:
        scores[excluded] = -np.inf
    k = int(min(k, vectors.shape[0] - np.unique(excluded).size))
    if k <= 0:
        return np.zeros(0, dtype=int), np.zeros(0)
    top = np.argsort(-scores, kind="stable")[:k]  # best first; a stable sort puts ties in row order
    return top, scores[top]


def pca_2d(points):
    r"""Project points onto their first two principal components (centre, then SVD).

    .. math:: X_c = X - \bar{x}, \qquad X_c = U S V^\top, \qquad Z = X_c V_{[:, :2]}

    Each axis's sign is fixed so that its largest-magnitude loading is positive, which makes the
    picture the same on every machine (an SVD may flip the sign of a singular vector).

    ``points (n, d)``. Returns ``coords (n, 2)``: the projected points (``n`` rows; a column of zeros if there is no
    second direction); ``explained (2,)``: the fraction of the total variance along each of the two axes.

    >>> coords, explained = pca_2d([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0], [4.0, 1.0, 1.0]])
    >>> coords.shape, explained.round(3)
    ((3, 2), array([0.982, 0.018]))
    """
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2:
        raise ValueError(f"points must have shape (n, d), got {points.shape}")
    centred = points - points.mean(axis=0)  # (n, d)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (min(n, d), d)
    axes = np.zeros((points.shape[1], 2))
    m = min(2, vt.shape[0])
    axes[:, :m] = vt[:m].T  # (d, 2)
    for j in range(m):
        if axes[np.argmax(np.abs(axes[:, j])), j] < 0:
            axes[:, j] *= -1
    coords = centred @ axes  # (n, d) @ (d, 2) -> (n, 2)
    variance = singular**2
    total = variance.sum()
    explained = np.zeros(2)
    if total > 0:
        explained[:m] = variance[:m] / total
    return coords, explained
