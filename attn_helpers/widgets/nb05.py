"""Notebook 05: edit W_q, W_k, W_v of the "I love AI" example and watch every intermediate update."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..examples import I_LOVE_AI_TOKENS, i_love_ai, qkv_attention_steps
from ..plotting import heatmap, text_colour_on
from . import Explorer

__all__ = ["MATRIX_NAMES", "draw_qkv", "update_qkv", "MatrixExplorer", "qkv_explorer",
           "EXPLORERS"]

#: The three projection matrices the widget edits, in the order of its grid.
MATRIX_NAMES = ("W_q", "W_k", "W_v")


def _entry_names(name, shape=(2, 2)):
    return [f"{name}_{r}{c}" for r in range(shape[0]) for c in range(shape[1])]


def _matrices(values):
    """Rebuild the 2x2 matrices from the widget values ``W_q_00`` ... ``W_v_11``."""
    ex = i_love_ai(dtype=np.float64)
    out = {}
    for name in MATRIX_NAMES:
        W = ex[name].copy()
        for key in _entry_names(name):
            if key in values and values[key] is not None:
                W[int(key[-2]), int(key[-1])] = float(values[key])
        out[name] = W
    return out


def _limits(matrix, signed):
    """Colour limits rounded outwards to whole numbers, so small edits keep the same colorbar."""
    if signed:
        lim = float(max(1.0, np.ceil(np.abs(matrix).max())))
        return -lim, lim
    return float(np.floor(matrix.min())), float(max(np.floor(matrix.min()) + 1.0, np.ceil(matrix.max())))


def draw_qkv(fig, tokens=I_LOVE_AI_TOKENS, X=None, **entries):
    """Heatmaps of Q K^T / sqrt(d_k), the weights and the output ``weights @ V``; Q, K, V in the note."""
    tokens = list(tokens)
    X = i_love_ai(dtype=np.float64)["X"] if X is None else np.asarray(X, dtype=float)
    W = _matrices(entries)
    steps = qkv_attention_steps(X, W["W_q"], W["W_k"], W["W_v"])
    fig.set_layout_engine("none")  # a fixed layout: constrained layout would double the cost of each redraw
    grid = fig.add_gridspec(1, 3, left=0.08, right=0.97, bottom=0.2, top=0.9, wspace=0.55, width_ratios=[1, 1, 0.75])
    left, middle, right = (fig.add_subplot(cell) for cell in grid)
    low, high = _limits(steps["scaled"], signed=True)
    heatmap(steps["scaled"], tokens, tokens, ax=left, title="scores Q Kᵀ / √d_k", cbar_label="score", vmin=low,
            vmax=high, cmap="PuOr_r")
    heatmap(steps["weights"], tokens, tokens, ax=middle, vmin=0, vmax=1, title="weights (softmax of each row)",
            ylabel="", cbar_label="weight")
    low, high = _limits(steps["context"], signed=False)
    heatmap(steps["context"], tokens, ["0", "1"], ax=right, title="output = weights @ V", xlabel="feature",
            ylabel="", cmap="cividis", vmin=low, vmax=high)
    fig.handles.update(X=X, tokens=tokens, panels=((left, "scaled", True), (middle, "weights", False),
                                                   (right, "context", False)))
    for ax in (left, middle, right):
        fig.dynamic.extend([ax.images[0], *ax.texts])
    return update_qkv(fig, **entries)


def update_qkv(fig, **entries):
    """Recolour and renumber the cells; values outside a colorbar widen its limits (the background is redrawn)."""
    handles = fig.handles
    tokens = handles["tokens"]
    W = _matrices(entries)
    steps = qkv_attention_steps(handles["X"], W["W_q"], W["W_k"], W["W_v"])
    for ax, key, signed in handles["panels"]:
        image, matrix = ax.images[0], steps[key]
        if matrix.min() < image.norm.vmin - 1e-9 or matrix.max() > image.norm.vmax + 1e-9:
            image.set_clim(*_limits(matrix, signed))  # outside the colorbar: widen it (the colorbar follows)
            fig.background_changed = True
        image.set_data(matrix)
        for text, value in zip(ax.texts, matrix.ravel()):
            text.set_text(f"{value:.2f}")
            text.set_color(text_colour_on(image.norm(value), signed))
    S = steps["scores"]
    if np.allclose(S, S.T):
        symmetry = "Q Kᵀ is <b>symmetric</b>: every pair of tokens scores each other equally (W_q W_kᵀ is symmetric)."
    else:
        i, j = np.unravel_index(np.argmax(np.abs(S - S.T)), S.shape)
        symmetry = (f"Q Kᵀ is <b>not symmetric</b>: score({tokens[i]} → {tokens[j]}) = {S[i, j]:.2f}, but "
                    f"score({tokens[j]} → {tokens[i]}) = {S[j, i]:.2f}.")
    weights = steps["weights"]
    best = [np.flatnonzero(row >= row.max() - 1e-6) for row in weights]  # several keys when tied
    attends = ", ".join(f"{tokens[q]} → {' / '.join(tokens[k] for k in keys)}{' (tied)' if len(keys) > 1 else ''}"
                        for q, keys in enumerate(best))
    lines = [f"<code>{name} = X W_{name.lower()}: "
             + " | ".join(f"{t} [{' '.join(f'{v:.2f}' for v in row)}]" for t, row in zip(tokens, steps[name]))
             + "</code>" for name in "QKV"]
    return "<br>".join(lines + [symmetry, f"Each query attends most to: {attends}."])


class MatrixExplorer(Explorer):
    """An :class:`Explorer` whose 12 number boxes are laid out as the three 2x2 matrices W_q, W_k, W_v."""

    def __init__(self, draw, controls, figsize=(10.4, 3.8), update=None):
        super().__init__(draw, controls, figsize, update=update)
        self.defaults = {name: control.value for name, control in self.controls.items()}
        grids = []
        for name in MATRIX_NAMES:
            boxes = [self.controls[key] for key in _entry_names(name)]
            grid = widgets.GridBox(boxes, layout=widgets.Layout(grid_template_columns="repeat(2, 78px)",
                                                                grid_gap="4px 6px"))
            title = widgets.HTML(f"<b style='font-size:1.1em'>{name.replace('_', '<sub>')}</sub></b>")
            grids.append(widgets.VBox([title, grid], layout=widgets.Layout(margin="0 24px 0 0")))
        self.reset_button = widgets.Button(description="reset to the worked example", icon="undo",
                                           layout=widgets.Layout(width="230px", margin="24px 0 0 0"))
        self.reset_button.on_click(lambda _button: self.reset())
        panel = widgets.HBox(grids + [self.reset_button])
        self.widget = widgets.VBox([panel, self.image, self.text])
        self.widget.add_class("attn-explorer")

    def static(self, **entries):
        """Show the figure once, without controls. Change entries by name: ``W_q_00`` is ``W_q[0, 0]``, ``W_q_01``
        is ``W_q[0, 1]``, and so on to ``W_v_11``; for example ``explorer.static(W_q_00=2, W_v_10=0)``."""
        super().static(**entries)

    def reset(self):
        """Restore the hand-worked values, redrawing once (not once per box)."""
        for name, control in self.controls.items():
            control.unobserve(self._on_change, names="value")
            control.value = self.defaults[name]
            control.observe(self._on_change, names="value")
        self.refresh()


def qkv_explorer():
    """Edit the entries of W_q, W_k, W_v (press Enter or leave the box) and watch every step update."""
    ex = i_love_ai(dtype=np.float64)
    controls = {}
    for name in MATRIX_NAMES:
        for key in _entry_names(name):
            value = float(ex[name][int(key[-2]), int(key[-1])])
            controls[key] = widgets.BoundedFloatText(  # the description names the box for a screen reader
                value=value, min=-3.0, max=3.0, step=0.5, description=f"{name}[{key[-2]},{key[-1]}]",
                style={"description_width": "0px"}, layout=widgets.Layout(width="78px"))
    return MatrixExplorer(draw_qkv, controls, update=update_qkv)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"qkv_explorer": qkv_explorer}
