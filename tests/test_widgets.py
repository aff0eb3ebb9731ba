"""The explorers' shared machinery (``attn_helpers.widgets``): static figures and the PNG they send."""

import io
from types import SimpleNamespace

import numpy as np
from IPython.core.formatters import DisplayFormatter
from matplotlib.figure import Figure
from PIL import Image

from attn_helpers import widgets


def _explorer():
    def draw(fig, value):
        fig.add_subplot().plot([0, value])
        return f"<b>value</b> {value}"

    return widgets.Explorer(draw, {"value": widgets.slider("value", 1, 0, 2, 1, integer=True)})


def _shown(monkeypatch, shell):
    shown = []
    monkeypatch.setattr(widgets, "get_ipython", lambda: shell)
    monkeypatch.setattr(widgets, "display", lambda data, **kwargs: shown.append((data, kwargs)))
    return shown


def test_static_figure_is_an_image_before_pyplot_has_set_up_inline_figures(monkeypatch, capsys):
    """A notebook whose first figure is an explorer's static one got only '<Figure size ...>' text."""
    shell = SimpleNamespace(display_formatter=DisplayFormatter())  # IPython before pyplot registered its formatter
    shown = _shown(monkeypatch, shell)
    explorer = _explorer()
    explorer.static(value=2)
    ((data, kwargs),) = shown
    assert kwargs["raw"] and data["text/plain"].startswith("<Figure size")
    assert Image.open(io.BytesIO(data["image/png"])).format == "PNG"
    assert explorer._positions  # drawn, so its solved layout serves the live figure too
    assert capsys.readouterr().out == "value 2\n"
    assert "image/png" not in shell.display_formatter.format(Figure())[0]  # IPython's formatters left alone


def test_static_figure_uses_ipythons_own_figure_formatter_when_there_is_one(monkeypatch):
    """After pyplot set up inline figures (or a learner chose SVG), the output is what display(fig) gives."""
    shell = SimpleNamespace(display_formatter=DisplayFormatter())
    shell.display_formatter.formatters["image/svg+xml"].for_type(Figure, lambda fig: "<svg/>")
    shown = _shown(monkeypatch, shell)
    _explorer().static()
    ((data, _),) = shown
    assert data["image/svg+xml"] == "<svg/>" and "image/png" not in data


def test_png_bytes_decodes_to_the_same_pixels():
    rgba = np.random.default_rng(0).integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    decoded = np.asarray(Image.open(io.BytesIO(widgets.png_bytes(rgba))))
    np.testing.assert_array_equal(decoded, rgba)


def test_live_figure_png_is_the_drawn_canvas():
    explorer = _explorer()
    png = explorer.render_png(value=2)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png))),
                                  np.asarray(explorer._live.canvas.buffer_rgba()))
