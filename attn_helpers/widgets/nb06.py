"""Notebook 06: what dividing the scores by sqrt(d_k) does, for d_k from 2 to 1024."""

from __future__ import annotations

from functools import lru_cache

import ipywidgets as widgets
import numpy as np

from ..core import entropy, softmax
from ..examples import SEED
from . import LABEL_STYLE, Explorer

__all__ = ["DK_CHOICES", "jacobian_norm", "score_sample", "scaling_summary", "draw_scaling", "scaling_explorer",
           "EXPLORERS"]

#: The key/query sizes the slider offers: powers of 2 from 2 to 1024.
DK_CHOICES = tuple(2**p for p in range(1, 11))

#: Keys per query in the sampled attention rows, and number of sampled queries.
NUM_KEYS = 8
NUM_QUERIES = 400


def jacobian_norm(weights):
    r"""Frobenius norm of the softmax Jacobian :math:`J = \mathrm{diag}(p) - p p^\top`, per row.

    The size of the gradient that flows from the weights back to the scores: near 0 for a
    one-hot row (the softmax is saturated), ``sqrt(1/T - 1/T**2)`` for uniform weights.

    Parameters
    ----------
    weights : array_like, shape (..., T)
        Softmax outputs (each row sums to 1).

    Returns
    -------
    norm : ndarray, shape (...)

    Examples
    --------
    >>> float(jacobian_norm([1.0, 0.0, 0.0]))
    0.0
    >>> float(jacobian_norm([0.5, 0.5]))
    0.5
    """
    p = np.asarray(weights, dtype=np.float64)
    eye = np.eye(p.shape[-1])
    jacobian = p[..., :, None] * eye - p[..., :, None] * p[..., None, :]  # (..., T, T)
    return np.sqrt((jacobian**2).sum(axis=(-2, -1)))


@lru_cache(maxsize=len(DK_CHOICES))
def score_sample(d_k):
    """Unscaled scores of ``NUM_QUERIES`` random queries with ``NUM_KEYS`` random keys each, shape (400, 8).

    Query and key components are independent standard normal numbers (seeded by ``SEED`` and ``d_k``),
    so each score has mean 0 and variance ``d_k``. The array is cached: treat it as read-only.
    """
    d_k = int(d_k)
    rng = np.random.default_rng([SEED, d_k])
    queries = rng.standard_normal((NUM_QUERIES, 1, d_k))
    keys = rng.standard_normal((NUM_QUERIES, NUM_KEYS, d_k))
    scores = (queries @ np.swapaxes(keys, -1, -2))[:, 0, :]  # (N, 1, d_k) @ (N, d_k, T) -> (N, 1, T) -> (N, T)
    scores.setflags(write=False)
    return scores


def scaling_summary(d_k):
    """Averages over the sampled rows, without and with scaling: score std, largest weight, entropy, ||J||_F."""
    scores = score_sample(d_k)
    summary = {}
    for name, scale in (("unscaled", 1.0), ("scaled", 1.0 / np.sqrt(d_k))):
        weights = softmax(scores * scale)
        summary[name] = {
            "score std": float((scores * scale).std()),
            "largest weight": float(weights.max(axis=-1).mean()),
            "entropy (nats)": float(entropy(weights).mean()),
            "gradient size ||J||": float(jacobian_norm(weights).mean()),
        }
    return summary


def draw_scaling(fig, d_k=64, query=0):
    """Left: the score distributions without/with scaling on one x-axis; right: one query's weights, both ways."""
    d_k = int(d_k) if d_k in DK_CHOICES else 64
    query = int(query) % NUM_QUERIES
    scores = score_sample(d_k)
    summary = scaling_summary(d_k)
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    left, right = fig.subplots(1, 2, width_ratios=[1.15, 1], gridspec_kw={"left": 0.05, "right": 0.98, "top": 0.84,
                                                                          "bottom": 0.14, "wspace": 0.22})
    limit = max(4.0 * np.sqrt(d_k), 5.0)  # one x-axis for both: the unscaled spread grows, the scaled does not
    sides = (("unscaled", "without scaling", 1.0, "#d8b365", -0.2, np.linspace(-limit, limit, 41)),
             ("scaled", f"with scaling (/ sqrt({d_k}))", 1.0 / np.sqrt(d_k), "#5ab4ac", 0.2, np.linspace(-5, 5, 21)))
    keys = np.arange(NUM_KEYS)
    for name, label, factor, colour, offset, bins in sides:
        shown = scores * factor
        counts, edges = np.histogram(shown, bins=bins)
        # each histogram scaled to peak 1, so that a narrow one does not dwarf a wide one
        left.stairs(counts / counts.max(), edges, fill=True, color=colour, alpha=0.85,
                    label=f"{label}: std {summary[name]['score std']:.2f}")
        weights = softmax(shown[query])
        right.bar(keys + offset, weights, width=0.4, color=colour,
                  label=f"{label.split(' (')[0]}: largest {weights.max():.2f}, entropy {entropy(weights):.2f}, "
                        f"||J|| {jacobian_norm(weights):.2f}")
    left.set_xlim(-limit, limit)
    left.set_ylim(0, 1.45)
    left.set_yticks([])
    left.set_xlabel("score")
    left.set_ylabel("frequency (peak = 1)")
    left.set_title(f"scores of {NUM_QUERIES} queries x {NUM_KEYS} keys")
    left.legend(loc="upper left", fontsize=10, frameon=False)
    right.set_ylim(0, 1.45)
    right.set_yticks([0, 0.25, 0.5, 0.75, 1])
    right.set_xticks(keys, labels=[f"k{j}" for j in keys])
    right.set_xlabel("key")
    right.set_ylabel("attention weight")
    right.set_title(f"sample query {query}: its weights over {NUM_KEYS} keys")
    right.legend(loc="upper left", fontsize=9, frameon=False)
    fig.suptitle(f"d_k = {d_k}: random queries and keys with unit-variance components", fontsize=13)
    lines = [f"{'averages over ' + str(NUM_QUERIES) + ' queries':<28}{'without scaling':>16}{'with scaling':>14}"]
    lines += [f"{metric:<28}{summary['unscaled'][metric]:>16.3f}{summary['scaled'][metric]:>14.3f}"
              for metric in summary["unscaled"]]
    lines.append(f"(uniform weights over {NUM_KEYS} keys: largest {1 / NUM_KEYS:.3f}, entropy {np.log(NUM_KEYS):.3f}, "
                 f"||J|| {np.sqrt(1 / NUM_KEYS - 1 / NUM_KEYS**2):.3f})")
    return "<pre>" + "\n".join(lines) + "</pre>"


def scaling_explorer():
    """A slider over d_k (powers of 2): score spread, weights, entropy and gradient size, without and with scaling."""
    d_k = widgets.SelectionSlider(options=list(DK_CHOICES), value=64, description="d_k (key/query size)",
                                  continuous_update=False, style=LABEL_STYLE, layout=widgets.Layout(width="420px"))
    query = widgets.IntSlider(value=0, min=0, max=9, step=1, description="sample query", continuous_update=False,
                              style=LABEL_STYLE, layout=widgets.Layout(width="420px"))
    return Explorer(draw_scaling, {"d_k": d_k, "query": query}, figsize=(10.5, 4.4))


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"scaling_explorer": scaling_explorer}
