"""Interactive explorers (ipywidgets), kept apart from the numpy core.

An :class:`Explorer` joins controls to a drawing function ``draw(fig, **values)``, which also gives
the static fallback figure (:meth:`Explorer.static`). Fast path: with ``update(fig, **values)``,
``draw`` lists the artists that change in ``fig.dynamic`` (handles in ``fig.handles``, artists that
change now and then in ``fig.middle``) and every later change edits only those, blitted over a
cached background. ``update`` raises :class:`FullRedraw` to get a new figure, and sets
``fig.background_changed`` / ``fig.middle_changed`` when it changed a static or middle artist.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable
from functools import partial

import ipywidgets as widgets
import numpy as np
from IPython import get_ipython
from IPython.core.pylabtools import print_figure
from IPython.display import display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..plotting import HIGHLIGHT_EDGE, OKABE_ITO

__all__ = ["Explorer", "FullRedraw", "redraw_dynamic", "slider", "dropdown", "toggle", "query_dropdown", "pick",
           "value_bars", "set_bars", "sentence_explorer", "show_figure", "png_bytes", "LABEL_STYLE", "checked_option"]


class FullRedraw(Exception):  # noqa: N818 - a signal, not an error
    """Raised by an ``update`` function when the change needs the whole figure drawn again."""

#: Wide labels, so "temperature" or "query token" is never cut off.
LABEL_STYLE = {"description_width": "initial"}


def _choices(control) -> list | None:
    """The values a control offers: a dropdown's (or buttons') values; ``None`` for a slider, box or text."""
    if not hasattr(control, "options"):
        return None
    return [option[1] if isinstance(option, tuple) and len(option) == 2 else option for option in control.options]


def _bounds(control) -> tuple[float, float] | None:
    """The range of a numeric slider or number box (a log slider in its own units, base ** min to base ** max)."""
    if isinstance(control, widgets.FloatLogSlider):
        return control.base ** control.min, control.base ** control.max
    if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.BoundedIntText, widgets.BoundedFloatText)):
        return control.min, control.max
    return None


def _same_option(value, choice) -> bool:
    """Whether ``value`` is ``choice``: equal, and both text or both not (1 is not "1"), both True/False or not."""
    if isinstance(value, str) != isinstance(choice, str) or isinstance(value, (bool, np.bool_)) != isinstance(
            choice, (bool, np.bool_)):
        return False
    try:
        return bool(value == choice)
    except (TypeError, ValueError):  # an array: never one option
        return False


def checked_option(name: str, value, choices=None, bounds=None):
    """``value`` when it is one of ``choices`` (or a number within ``bounds``), else a ValueError that names the
    option and lists what it takes, in one sentence.

    >>> checked_option("placement", "post-norm", choices=["pre-norm (GPT-2)", "post-norm (original)"])
    Traceback (most recent call last):
    ...
    ValueError: placement='post-norm' is not one of its options: 'pre-norm (GPT-2)', 'post-norm (original)'
    """
    if choices is not None and not any(_same_option(value, c) for c in choices):
        raise ValueError(f"{name}={value!r} is not one of its options: {', '.join(map(repr, choices))}")
    if bounds is not None:
        low, high = bounds
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not low <= value <= high:
            raise ValueError(f"{name}={value!r} is outside its range: a number from {low:g} to {high:g}")
    return value


def slider(description, value, min, max, step, *, integer=False, readout_format=None, **kwargs):  # noqa: A002
    """A labelled slider that redraws only when released (``continuous_update=False``)."""
    cls = widgets.IntSlider if integer else widgets.FloatSlider
    extra = {} if integer or readout_format is None else {"readout_format": readout_format}
    return cls(value=value, min=min, max=max, step=step, description=description, continuous_update=False,
               style=LABEL_STYLE, layout=widgets.Layout(width="420px"), **extra, **kwargs)


def dropdown(description, options, value=None, **kwargs):
    """A labelled dropdown (token picker, metric picker, ...)."""
    options = list(options)
    return widgets.Dropdown(options=options, value=options[0] if value is None else value, description=description,
                            style=LABEL_STYLE, **kwargs)


def toggle(description, value=False, **kwargs):
    """A labelled on/off checkbox."""
    return widgets.Checkbox(value=value, description=description, style=LABEL_STYLE, indent=False, **kwargs)


def query_dropdown(tokens, preferred="journey", description="query token"):
    """A dropdown of a sentence's tokens that starts on ``preferred`` when the sentence has it."""
    tokens = list(tokens)
    return dropdown(description, tokens, preferred if preferred in tokens else None)


def pick(tokens, token):
    """``(i, tokens[i])`` for ``token``, or the first token when the sentence lacks it.

    >>> pick(["Your", "journey"], "journey"), pick(["Your", "journey"], "nowhere")
    ((1, 'journey'), (0, 'Your'))
    """
    tokens = list(tokens)
    i = tokens.index(token) if token in tokens else 0
    return i, tokens[i]


def value_bars(ax, n, colours, fontsize=11):
    """``(bars, labels)``: ``n`` bars of height 0 with empty labels on top, for :func:`set_bars` to fill in."""
    bars = ax.bar(range(n), np.zeros(n), color=colours)
    labels = ax.bar_label(bars, labels=[""] * n, fontsize=fontsize)
    return bars, labels


def set_bars(bars, values, labels=None, *, colours=None, texts=None, highlight=None):
    """Set each bar to its value and label it (2 decimals, or ``texts[k]``); ``highlight``: black-edged bar."""
    for k, (bar, value) in enumerate(zip(bars, values, strict=True)):
        bar.set_height(value)
        if colours is not None:
            bar.set_facecolor(colours[k])
        bar.set_edgecolor(HIGHLIGHT_EDGE if k == highlight else "none")
        bar.set_linewidth(3 if k == highlight else 0)
        if labels is not None:
            labels[k].set_text(f"{value:.2f}" if texts is None else texts[k])
            labels[k].xy = (bar.get_x() + bar.get_width() / 2, value)


def sentence_explorer(draw, update, controls, *, figsize, layout="row", **fixed):
    """The :class:`Explorer` of a drawing that also takes fixed arguments (the sentence's ``tokens``, its ``X``)."""
    return Explorer(partial(draw, **fixed), controls, figsize=figsize, layout=layout, update=update)


def redraw_dynamic(fig, key, draw):
    """Replace the artists that ``draw()`` added last time under ``key`` by the ones it adds now (dynamic ones)."""
    store = fig.handles.setdefault("_dynamic_groups", {})
    for artist in store.pop(key, []):
        artist.remove()
        if artist in fig.dynamic:
            fig.dynamic.remove(artist)
    before = {ax: set(ax.get_children()) for ax in fig.axes}
    result = draw()
    added = [a for ax in fig.axes for a in ax.get_children() if a not in before.get(ax, ())]
    store[key] = added
    fig.dynamic.extend(added)
    return result


def _prepare(fig) -> None:
    """The attributes that ``draw`` and ``update`` fill in or set (see the module's docstring)."""
    fig.dynamic, fig.middle, fig.handles = [], [], {}
    fig.background_changed = fig.middle_changed = False


def show_figure(fig) -> None:
    """``display(fig)``, as a PNG even before pyplot has registered IPython's figure formatter."""
    shell = get_ipython()
    if shell is None:  # a plain Python session: whatever display does there
        display(fig)
        return
    data, metadata = shell.display_formatter.format(fig)
    if not any(kind.startswith("image/") for kind in data):
        data = {**data, "image/png": print_figure(fig, "png")}
    display(data, metadata=metadata, raw=True)


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bytes(rgba) -> bytes:
    """A PNG file of an RGBA image ``(height, width, 4)``: rows unfiltered, fastest zlib (half PIL's time).

    >>> png_bytes(np.zeros((2, 3, 4), dtype=np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    rgba = np.asarray(rgba, dtype=np.uint8)
    height, width, _ = rgba.shape
    rows = np.zeros((height, 1 + 4 * width), dtype=np.uint8)  # each row starts with its filter type: 0, none
    rows[:, 1:] = rgba.reshape(height, 4 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA, no interlacing
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(rows, 1))
            + _png_chunk(b"IEND", b""))


class Explorer:
    """Controls (name -> widget) plus a figure that ``draw(fig, **values)`` redraws on every change.

    ``draw`` may return a note shown under the figure; an exception is shown as a message, never a
    traceback. ``samples``: texts a learner might type in a text box (the latency benchmark tries them).
    """

    def __init__(self, draw: Callable[..., str | None], controls: dict, figsize=(8, 4), layout="column",
                 update: Callable[..., str | None] | None = None, samples: dict | None = None):
        self.draw = draw
        self.update = update
        self.controls = dict(controls)
        self.samples = {name: tuple(values) for name, values in (samples or {}).items()}
        self.figsize = figsize
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
        self.text = widgets.HTML()
        boxes = list(self.controls.values())
        panel = widgets.HBox(boxes) if layout == "row" else widgets.VBox(boxes)
        self.widget = widgets.VBox([panel, self.image, self.text])
        self.widget.add_class("attn-explorer")  # lets the browser tests find the live widget
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.renders = 0
        self._muted = False
        self._live = None  # the reused figure of the live widget
        self._background = None  # its cached background, when it has an update function
        self._middle = None  # the background with the middle layer drawn over it
        self._positions = {}  # solved layouts, by figure structure

    @property
    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _checked(self, overrides: dict) -> dict:
        """The current values updated with ``overrides``, each the name of a control and a value it offers; a
        ValueError in one sentence otherwise (a dropdown's values, a slider's range, True/False for a box)."""
        unknown = [name for name in overrides if name not in self.controls]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not an option of this explorer: its options are "
                             f"{', '.join(self.controls)}")
        saved, self._muted = self.values, True
        sliders = {name: value for name, value in overrides.items() if _bounds(self.controls[name]) is not None}
        try:  # the choices first, set for a moment: a slider's range may follow one (the tiles of a tile size)
            for name, value in overrides.items():
                control = self.controls[name]
                if name not in sliders:
                    boxes = isinstance(control, (widgets.Checkbox, widgets.ToggleButton))
                    control.value = checked_option(name, value, choices=[True, False] if boxes else
                                                   _choices(control))
            for name, value in sliders.items():
                checked_option(name, value, bounds=_bounds(self.controls[name]))
        finally:  # every value back as it was, the choices before the sliders whose ranges follow them
            for name in sorted(saved, key=lambda name: _bounds(self.controls[name]) is not None):
                if self.controls[name].value != saved[name]:
                    self.controls[name].value = saved[name]
            self._muted = False
        return {**saved, **overrides}

    def figure(self, **overrides):
        """Draw a new figure for the current values (updated with ``overrides``) and return it."""
        values = {**self.values, **overrides}
        fig = Figure(figsize=self.figsize, layout="constrained")
        FigureCanvasAgg(fig)
        _prepare(fig)
        fig.note = self.draw(fig, **values) or ""
        return fig

    def render(self, **overrides) -> tuple[bytes, str]:
        """``(png, note)`` of the live figure: blitted via ``update``, else redrawn with a cached layout."""
        values = {**self.values, **overrides}
        fig = self._live
        if self.update is not None and self._background is not None:
            try:
                note = self.update(fig, **values) or ""
            except FullRedraw:
                pass
            else:
                return self._blit(fig.background_changed, fig.middle_changed), note
        if fig is None:
            fig = self._live = Figure(figsize=self.figsize)
            FigureCanvasAgg(fig)
        else:
            fig.clear()
        _prepare(fig)
        note = self.draw(fig, **values) or ""
        positions = self._positions.get(self._structure(fig))
        if positions is None:  # solve the constrained layout once, on a throw-away copy
            solved = self.figure(**values)
            solved.canvas.draw()
            positions = self._positions[self._structure(fig)] = [ax.get_position() for ax in solved.axes]
        if len(positions) == len(fig.axes):
            for ax, position in zip(fig.axes, positions):
                ax.set_position(position)
        self._background = None
        if self.update is None:
            fig.canvas.draw()  # no bbox_inches="tight" (it would draw everything twice)
            return png_bytes(fig.canvas.buffer_rgba()), note
        for artist in [*fig.middle, *fig.dynamic]:  # left out of the background
            artist.set_animated(True)
        return self._blit(True, True), note

    @staticmethod
    def _structure(fig) -> tuple:
        return tuple((type(ax).__name__, ax.get_label()) for ax in fig.axes)

    def _draw_over(self, background, artists) -> None:
        fig = self._live
        fig.canvas.restore_region(background)
        for artist in artists:
            (artist.axes or fig).draw_artist(artist)

    def _blit(self, background: bool, middle: bool) -> bytes:
        """Redraw the background and the middle layer when they changed, then the dynamic artists over them."""
        fig = self._live
        if background:
            fig.canvas.draw()  # the middle and dynamic artists are animated: drawn without them
            self._background = fig.canvas.copy_from_bbox(fig.bbox)
        if background or middle:
            self._middle = self._background
            if fig.middle:
                self._draw_over(self._background, fig.middle)
                self._middle = fig.canvas.copy_from_bbox(fig.bbox)
        fig.background_changed = fig.middle_changed = False
        self._draw_over(self._middle, fig.dynamic)
        return png_bytes(fig.canvas.buffer_rgba())

    def render_png(self, **overrides) -> bytes:
        """The PNG bytes of :meth:`render` (the latency benchmark times this)."""
        return self.render(**overrides)[0]

    def static(self, **overrides):
        """Show the figure once, without controls (the fallback for GitHub and print); an option the controls do
        not offer is refused with a ValueError that lists the options."""
        fig = self.figure(**self._checked(overrides))

        def keep_layout(event):  # the notebook's display draws it: its solved layout serves the live figure too
            self._positions.setdefault(self._structure(fig), [ax.get_position() for ax in fig.axes])

        fig.canvas.mpl_connect("draw_event", keep_layout)
        show_figure(fig)
        if fig.note:
            print(re.sub(r"<[^>]+>", "", fig.note.replace("<br>", "\n")))  # the note without its HTML

    def refresh(self):
        """Redraw the live figure (called on every control change); never raises."""
        self.renders += 1
        try:
            png, note = self.render()
        except Exception as err:  # noqa: BLE001 - a widget must never leave a traceback
            self._background = self._middle = None
            message = f"Could not draw this combination: {type(err).__name__}: {err}"
            self.text.value = f"<div style='color:{OKABE_ITO['vermillion']}'>{message}</div>"
            return
        self.image.value = png
        self.text.value = f"<div style='font-size:1.05em'>{note}</div>" if note else ""

    def _on_change(self, change):
        if not self._muted:  # a value set for a moment while overrides are checked draws nothing
            self.refresh()

    def show(self):
        """Display the controls and draw the first figure."""
        self.refresh()
        display(self.widget)
        return None
