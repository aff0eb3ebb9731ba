"""Notebook 11: watch trained attention form (numbers from :mod:`attn_helpers.training`; this module draws)."""

from __future__ import annotations

from functools import partial

import ipywidgets as widgets
import numpy as np

from ..plotting import OKABE_ITO, SERIES_COLOURS, heatmap
from ..training import SHIPPED_SNAPSHOTS, load_runs, token_labels
from . import Explorer, FullRedraw, dropdown

__all__ = ["LossProgress", "masked_weights", "position_labels", "draw_snapshots", "draw_loss_curves", "draw_training",
           "update_training", "training_explorer", "recent_loss", "EXPLORERS"]


class LossProgress:
    """A progress bar with the live loss, for ``train(..., progress=bar)``; shows nothing outside Jupyter.

    ``bar(step, loss)`` moves the bar and rewrites the label.
    """

    def __init__(self, steps, description="training"):
        self.bar = widgets.IntProgress(value=0, min=0, max=max(int(steps), 1), description=description,
                                       style={"description_width": "initial", "bar_color": OKABE_ITO["blue"]})
        self.label = widgets.Label(value=f"step 0 / {self.bar.max}")
        self.widget = widgets.HBox([self.bar, self.label])

    def __call__(self, step, loss):
        self.bar.value = int(step)
        self.label.value = f"step {int(step)} / {self.bar.max}   loss {float(loss):.4f}"

    def __repr__(self):  # what a console or a plain-text log shows
        return f"{self.bar.description}: {self.label.value}"

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _nearest_snapshot(run, step):
    """The run's latest snapshot at or before ``step``."""
    steps = [s for s in run.snapshots if s <= step]
    return max(steps) if steps else min(run.snapshots)


def _heads(run, step):
    """``[(title, weights (T, T))]`` for every layer and head of ``run`` at snapshot ``step``."""
    weights = run.snapshots[step]  # (layers, h, T, T)
    layers, heads = weights.shape[:2]
    panels = []
    for layer in range(layers):
        for head in range(heads):
            name = [] if layers == 1 else [f"layer {layer}"]  # counted from 0, as the code indexes them
            name += [] if heads == 1 else [f"head {head}"]
            panels.append((", ".join(name), weights[layer, head]))
    return panels


def masked_weights(run, weights):
    """``weights`` with the cells the task's mask forbids set to NaN: drawn in the masked grey, never as a 0."""
    mask = run.the_task().mask()
    return weights if mask is None else np.where(mask, weights, np.nan)


_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def position_labels(run):
    """The probe's tick labels: each token with its position as a subscript ("P₄"), since a token can occur twice.

    >>> from attn_helpers.training import TrainingRun
    >>> position_labels(TrainingRun("induction", None, {}, 1, 0, np.zeros(1), probe=np.array([15, 1, 15])))
    ['P₀', 'B₁', 'P₂']
    """
    return [f"{token}{str(i).translate(_SUBSCRIPT)}" for i, token in enumerate(token_labels(run.task, run.probe))]


def draw_snapshots(fig, run, steps=None, layer=0, head=0):
    """One heatmap of the probe's attention weights per training step, one colorbar; returns the steps' losses."""
    steps = list(run.snapshots) if steps is None else [_nearest_snapshot(run, s) for s in steps]
    labels = position_labels(run)
    # fixed margins (no layout engine): a row of many heatmaps is slow to lay out, and these never need it
    axes = np.atleast_1d(fig.subplots(1, len(steps), sharey=True, gridspec_kw={
        "left": 0.06, "right": 0.9, "bottom": 0.2, "top": 0.7, "wspace": 0.06}))
    image = None
    for k, (ax, step) in enumerate(zip(axes, steps)):
        weights = masked_weights(run, run.snapshots[step][layer, head])
        loss = run.losses[max(step - 1, 0)]  # the loss of the batch of the step that led here
        image = heatmap(weights, labels, labels, ax=ax, vmin=0, vmax=1, annotate=False, colorbar=False,
                        title=f"step {step}\nloss {loss:.2f}", xlabel="key", ylabel="query" if k == 0 else None)
    fig.colorbar(image, cax=fig.add_axes((0.92, 0.2, 0.012, 0.5)), label="attention weight",
                 ticks=[0, 0.5, 1])
    return "; ".join(f"step {s}: loss {run.losses[max(s - 1, 0)]:.3f}" for s in steps)


def recent_loss(run, step, width=10):
    """``(loss, text)``: the mean loss of the ``width`` steps up to ``step`` (as the curves and tables show it).

    At step 0 (before any update) it is the loss of the first batch.

    >>> from attn_helpers.training import TrainingRun
    >>> run = TrainingRun("reverse", None, {}, 4, 0, np.array([4.0, 2.0, 1.0, 1.0]))
    >>> recent_loss(run, 0)[1], recent_loss(run, 4, width=2)[1]
    ('loss 4.000 (first batch, before any update)', 'loss 1.000 (mean of steps 3 to 4)')
    """
    if step == 0:
        return float(run.losses[0]), f"loss {run.losses[0]:.3f} (first batch, before any update)"
    first = max(step - width, 0)
    loss = float(np.mean(run.losses[first:step]))
    return loss, f"loss {loss:.3f} (mean of steps {first + 1} to {step})" if step > first + 1 else \
        f"loss {loss:.3f} (step {step})"


def _smoothed_losses(run, smooth=10):
    """``(steps, losses)``: the run's running mean over ``smooth`` steps, floored at 1e-4 for a log axis."""
    steps, curve = run.smoothed_losses(smooth)
    return steps, np.maximum(curve, 1e-4)


def draw_loss_curves(ax, runs, labels=None, smooth=10):
    """Training loss of several runs on one log-scale axis (a running mean over ``smooth`` steps)."""
    for k, (name, run) in enumerate(runs.items()):
        ax.plot(*_smoothed_losses(run, smooth), linewidth=2.2, color=SERIES_COLOURS[k % len(SERIES_COLOURS)],
                label=name if labels is None else labels[k])
    ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel("cross-entropy loss")
    ax.legend(fontsize=11, frameon=False)


def _layout_key(run):
    """What fixes the explorer's axes: the panels (layers x heads) and the probe's tokens."""
    weights = next(iter(run.snapshots.values()))
    return weights.shape[:2], tuple(token_labels(run.task, run.probe))


def draw_training(fig, task="reverse", step=20, runs=None):
    """The explorer's figure: the probe's attention at one snapshot (every layer and head) and the loss curve."""
    run = runs[task]
    step = _nearest_snapshot(run, min(int(step), run.steps))
    panels = _heads(run, step)
    labels = position_labels(run)
    grid = fig.add_gridspec(1, len(panels) + 2, width_ratios=[1] * len(panels) + [0.35, 1.15])  # a gap for the bar
    images = []
    for k, (title, weights) in enumerate(panels):
        ax = fig.add_subplot(grid[0, k])
        images.append(heatmap(masked_weights(run, weights), labels, labels, ax=ax, vmin=0, vmax=1, annotate=False,
                              colorbar=False, title=title or f"{task}", xlabel="key",
                              ylabel="query" if k == 0 else None))
    fig.colorbar(images[-1], ax=fig.axes, shrink=0.8, label="attention weight")
    curve = fig.add_subplot(grid[0, -1])
    draw_loss_curves(curve, {task: run})
    curve.set_ylim(1e-4, 10)  # the same for every run, so that another task can reuse the axes
    curve.set_xlim(0, run.steps * 1.03)
    marker = curve.axvline(step, color=OKABE_ITO["vermillion"], linewidth=2, linestyle="--")
    curve.set_title(" ")
    fig.handles = {"task": task, "run": run, "runs": runs, "layout": _layout_key(run), "images": images,
                   "marker": marker, "curve": curve}
    fig.dynamic = [*images, *(image.axes.title for image in images), curve.lines[0], marker, curve.get_legend(),
                   curve.title]
    return update_training(fig, task=task, step=step)


def _switch_run(fig, task):
    """Show another run on the same axes (same panels and tokens): new loss curve, legend and titles."""
    h = fig.handles
    run = h["runs"][task]
    if _layout_key(run) != h["layout"]:
        raise FullRedraw  # other panels or other tokens: a new figure
    curve = h["curve"]
    if run.steps != h["run"].steps:
        curve.set_xlim(0, run.steps * 1.03)
        fig.background_changed = True
    h["task"], h["run"] = task, run
    curve.lines[0].set_data(*_smoothed_losses(run))
    curve.get_legend().get_texts()[0].set_text(task)
    if len(h["images"]) == 1:  # a single panel is titled with the task's name
        h["images"][0].axes.set_title(task)


def update_training(fig, task="reverse", step=20, **_):
    """Move the explorer's figure to another step, or another run of the same shape (the live widget's fast path)."""
    h = fig.handles
    if task != h["task"]:
        _switch_run(fig, task)
    run = h["run"]
    step = _nearest_snapshot(run, min(int(step), run.steps))
    for image, (_, weights) in zip(h["images"], _heads(run, step)):
        image.set_data(masked_weights(run, weights))
    h["marker"].set_xdata([step, step])
    h["curve"].set_title(f"step {step} of {run.steps}")
    labels = token_labels(run.task, run.probe)
    return (f"<b>{task}</b> ({run.the_task().description}), probe {' '.join(labels)}: "
            f"step {step}, {recent_loss(run, step)[1]}")


def training_explorer(runs=None):
    """Pick a task and a training step: the attention weights of the shipped run at that step."""
    runs = load_runs() if runs is None else runs

    controls = {  # the step first: moving it only redraws the heatmaps (a task switch redraws the figure)
        "step": widgets.SelectionSlider(options=list(SHIPPED_SNAPSHOTS), value=20, description="training step",
                                        continuous_update=False, style={"description_width": "initial"},
                                        layout=widgets.Layout(width="420px")),
        "task": dropdown("task", list(runs), "reverse"),
    }
    return Explorer(partial(draw_training, runs=runs), controls, figsize=(10.3, 4.0), update=update_training)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"training_explorer": training_explorer}
