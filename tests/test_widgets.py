"""The explorers' shared machinery (``attn_helpers.widgets``): static figures and the PNG they send."""

import io
import re
from types import SimpleNamespace

import ipywidgets
import numpy as np
import pytest
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


def _every_explorer():
    import importlib
    import pkgutil

    for info in sorted(pkgutil.iter_modules(widgets.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"attn_helpers.widgets.{info.name}")
        for name, factory in getattr(module, "EXPLORERS", {}).items():
            yield f"{info.name}.{name}", factory


EVERY_EXPLORER = dict(_every_explorer())


@pytest.mark.parametrize("name", sorted(EVERY_EXPLORER))
def test_every_explorer_refuses_an_option_it_does_not_know_in_one_sentence(name, monkeypatch):
    """static(...) with an unknown keyword, a string that is none of a dropdown's choices, a number outside a
    slider's range or a non-boolean for a box: a ValueError that lists what it takes, and nothing drawn."""
    explorer = EVERY_EXPLORER[name]()
    monkeypatch.setattr(widgets, "show_figure", lambda fig: pytest.fail("drew a figure for a wrong option"))
    before = explorer.values
    with pytest.raises(ValueError, match="not an option of this explorer: its options are") as refused:
        explorer.static(no_such_option=1)
    assert all(control in str(refused.value) for control in explorer.controls)
    probed = 0
    for control_name, control in explorer.controls.items():
        choices, bounds = widgets._choices(control), widgets._bounds(control)
        if isinstance(control, (ipywidgets.Checkbox, ipywidgets.ToggleButton)):
            wrong, words = "yes", "is not one of its options: True, False"
        elif choices is not None:
            wrong, words = "no such choice", f"is not one of its options: {choices[0]!r}"
        elif bounds is not None:
            wrong, words = bounds[1] + abs(bounds[1] - bounds[0]) + 1, "is outside its range: a number from"
        else:  # free text: any string is an option
            continue
        with pytest.raises(ValueError, match=re.escape(words)) as refused:
            explorer.static(**{control_name: wrong})
        assert str(refused.value).startswith(f"{control_name}={wrong!r}") and str(refused.value).count(". ") == 0
        probed += 1
    assert probed and explorer.values == before and explorer.renders == 0


def test_the_stream_explorer_draws_post_norm_only_when_asked_by_its_name():
    from attn_helpers.widgets.nb10 import PLACEMENTS, draw_stream, stream_explorer

    with pytest.raises(ValueError, match="placement='post-norm' is not one of its options"):
        stream_explorer().static(placement="post-norm")
    with pytest.raises(ValueError, match="is not one of its options"):
        draw_stream(Figure(), placement="post-norm")
    assert len(PLACEMENTS) == 2
