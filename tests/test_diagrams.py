"""Every mechanism has a picture, drawn from the arrays of its notebook (issue 46, item 3).

- Notebooks 02, 03, 04, 05, 08, 10, 11, 13, 15 and 16 each hold a code cell tagged ``diagram`` that draws a figure with
  ``flow_diagram`` and prints its text version (``describe_flow``), with alt text for the site that names every box
  and every shape of that text version: nbval recomputes the text from the arrays, so the alt text cannot drift.
- The helper labels each box with the shape of the array it was given (change the array, the label follows), draws
  no text under 12 pt, no figure wider than a notebook cell at 1280 pixels, and only the series' colours.
"""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn_helpers import plotting  # noqa: E402
from attn_helpers.plotting import array_node, describe_flow, flow_diagram, induction_nodes, step_node  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DIAGRAM_NOTEBOOKS = ("02", "03", "04", "05", "08", "10", "11", "13", "15", "16")
#: The widest stored figure a notebook cell at 1280 pixels shows at its own size (so 12 pt stays 12 pt).
MAX_PIXELS = 1100
SHAPE = re.compile(r"\(([\d, ]+)\)")


def notebook(number):
    (path,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    return nbformat.read(path, as_version=4)


def diagram_cells(number):
    return [c for c in notebook(number).cells if c.cell_type == "code" and "diagram" in c.metadata.get("tags", [])]


def printed(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def png_width(cell):
    widths = []
    for output in cell.get("outputs", []):
        data = output.get("data", {}).get("image/png")
        if data:
            raw = base64.b64decode(data)
            widths.append(struct.unpack(">I", raw[16:20])[0])  # the IHDR chunk: width, then height
    return widths


@pytest.mark.parametrize("number", DIAGRAM_NOTEBOOKS)
def test_each_mechanism_notebook_has_a_diagram_with_alt_text(number):
    cells = diagram_cells(number)
    assert cells, f"notebook {number}: no code cell tagged 'diagram'"
    for cell in cells:
        alt = cell.metadata.get("alt")
        alts = [alt] if isinstance(alt, str) else list(alt or [])
        widths = png_width(cell)
        assert widths, f"notebook {number}: the diagram cell {cell.id} draws no figure"
        assert len(alts) == len(widths) and all(len(a.split()) >= 25 for a in alts), (
            f"notebook {number}, cell {cell.id}: each figure needs alt text (cell metadata 'alt') that says what "
            f"flows where; got {alts!r}")
        assert max(widths) <= MAX_PIXELS, f"notebook {number}: a diagram {max(widths)} px wide shrinks on a projector"
        assert "flow_diagram(" in cell.source and "describe_flow(" in cell.source, (
            f"notebook {number}, cell {cell.id}: draw with plotting.flow_diagram and print describe_flow, its text")


def test_no_stored_figure_is_wider_than_a_notebook_cell():
    """Every figure of every notebook, optional ones too, shows at its own size in a notebook cell at 1280 pixels
    (``MAX_PIXELS``): a wider one is scaled down and its 12 pt text with it."""
    wide = {f"{path.name[:2]} {cell.get('id')}": width
            for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
            for cell in nbformat.read(path, as_version=4).cells for width in png_width(cell) if width > MAX_PIXELS}
    assert not wide, f"figures wider than {MAX_PIXELS} px (draw them narrower: figsize): {wide}"


@pytest.mark.parametrize("number", DIAGRAM_NOTEBOOKS)
def test_alt_text_names_every_box_and_shape_the_arrays_gave(number):
    """The printed text version comes from the arrays (and nbval recomputes it); the alt text must say the same."""
    for cell in diagram_cells(number):
        alt = " ".join([cell.metadata["alt"]] if isinstance(cell.metadata["alt"], str) else cell.metadata["alt"])
        lines = [line for line in printed(cell).splitlines() if SHAPE.search(line.split(" <- ")[0])]
        assert lines, f"notebook {number}, cell {cell.id}: print(describe_flow(nodes, edges)) under the figure"
        for line in lines:
            box = line.split(" <- ")[0]
            label = box.split(" (")[0]
            shape = SHAPE.findall(box)[-1]
            assert label in alt, f"notebook {number}: the alt text never names the box {label!r} ({line!r})"
            assert f"({shape})" in alt, f"notebook {number}: the alt text lacks the shape ({shape}) of {label!r}"


def _texts(fig):
    return [t for t in fig.findobj(Text) if t.get_text().strip()]


def _example(rows=3, cols=2):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, 4))
    W_q = rng.standard_normal((4, cols))
    Q = X @ W_q  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    weights = plotting_softmax(Q @ Q.T)
    tokens = ["Your", "journey", "starts", "with", "one", "step"][:rows]
    nodes = [array_node("X", X, (0, 0), dims=("T", "d_in"), tokens=tokens, name_rows=True),
             array_node("W_q", W_q, (2, 0), dims=("d_in", "d_k"), parameter=True),
             array_node("Q", Q, (4, 0), dims=("T", "d_k"), tokens=tokens),
             step_node("softmax", (6, 0)),
             array_node("weights", weights, (8, 0), dims=("T", "T"), show_values=True)]
    edges = [("X", "W_q"), ("W_q", "Q"), ("Q", "softmax", "Q Qᵀ"), ("softmax", "weights")]
    return nodes, edges


def plotting_softmax(scores):
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("rows, cols", [(3, 2), (5, 4), (6, 1)])
def test_labels_follow_the_arrays_shapes(rows, cols):
    nodes, edges = _example(rows, cols)
    ax = flow_diagram(nodes, edges)
    texts = {t.get_text() for t in _texts(ax.figure)}
    plt.close(ax.figure)
    assert f"(T, d_k)\n= ({rows}, {cols})" in texts, texts
    assert f"(T, T)\n= ({rows}, {rows})" in texts, texts
    assert f"Q (T, d_k) = ({rows}, {cols}) <- X times W_q" in describe_flow(nodes, edges)
    others = {(3, 2), (5, 4), (6, 1)} - {(rows, cols)}
    assert not any(f"= ({r}, {c})" in text for r, c in others for text in texts)


def test_text_is_legible_on_a_projector():
    nodes, edges = _example()
    with matplotlib.rc_context():
        plotting.setup_style()  # as every notebook does: the series' dpi
        ax = flow_diagram(nodes, edges, title="a title")
    fig = ax.figure
    sizes = [t.get_fontsize() for t in _texts(fig)]
    plt.close(fig)
    assert sizes and min(sizes) >= plotting.DIAGRAM_FONT_SIZE >= 12, sizes
    assert fig.get_size_inches()[0] * fig.dpi <= MAX_PIXELS
    with pytest.raises(ValueError, match="wider"):
        flow_diagram(nodes, edges, figsize=(16, 4))


def test_colours_are_the_series_palette():
    nodes, edges = _example(6, 2)
    ax = flow_diagram(nodes, edges)
    allowed = {to_hex(c) for c in (*plotting.OKABE_ITO.values(), plotting.PAPER_COLOUR, plotting.PARAMETER_COLOUR,
                                   plotting.GUIDE_COLOUR)}
    faces = {to_hex(p.get_facecolor()) for p in ax.patches if p.get_fill()}
    faces |= {to_hex(t.get_bbox_patch().get_facecolor()) for t in _texts(ax.figure) if t.get_bbox_patch()}
    inks = {to_hex(t.get_color()) for t in _texts(ax.figure)}
    images = [im.get_cmap().name for im in ax.findobj(AxesImage)]
    plt.close(ax.figure)
    assert faces <= allowed and inks <= allowed, (faces - allowed, inks - allowed)
    token_rows = {to_hex(plotting.token_colour(t)) for t in ["Your", "journey", "starts", "with", "one", "step"]}
    assert token_rows <= faces, "each row of X and Q is drawn in its token's series colour"
    assert images == ["viridis"], images


def test_bad_input_names_the_argument_and_shapes():
    with pytest.raises(ValueError, match=r"tokens of 'X'.*2 tokens, shape \(3, 2\)"):
        array_node("X", np.zeros((3, 2)), (0, 0), tokens=["a", "b"])
    with pytest.raises(ValueError, match=r"dims must name each axis of the shape \(3, 2\)"):
        array_node("X", np.zeros((3, 2)), (0, 0), dims=("T",))
    nodes, _ = _example()
    with pytest.raises(ValueError, match="names 'K', which is no node's key"):
        flow_diagram(nodes, [("X", "K")])
    plt.close("all")


def test_induction_arrows_follow_the_weights():
    tokens, ids = list("ABCDABCD"), np.array([0, 1, 2, 3, 0, 1, 2, 3])
    previous = np.eye(8, k=-1)
    previous[0, 0] = 1.0                                      # each query on the key just before it
    induction = np.zeros((8, 8))
    for i in range(8):
        induction[i, i - 3 if i >= 4 else 0] = 1.0             # the token after the earlier copy of my token
    nodes, edges = induction_nodes(tokens, ids, previous, induction, range(1, 8), range(4, 7))
    arrows = {(a, b) for a, b, *_ in edges}
    assert {(f"0 {i - 1}", f"0 {i}") for i in range(1, 8)} <= arrows
    assert {(f"1 {i - 3}", f"1 {i}") for i in range(4, 7)} <= arrows
    assert {(f"0 {j}", f"1 {j}") for j in (1, 2, 3)} <= arrows  # the keys the induction head reads, up the stream
    notes = {n.key: n.note for n in nodes if n.note}
    assert notes == {"1 4": "→ B", "1 5": "→ C", "1 6": "→ D"}, notes
    colours = {n.key: n.colour for n in nodes if n.colour}
    assert colours["0 0"] == colours["0 4"] != colours["0 1"], "a repeated token keeps its first copy's colour"
    with pytest.raises(ValueError, match=r"induction_weights must be \(T, T\) = \(8, 8\).*\(8, 7\)"):
        induction_nodes(tokens, ids, previous, induction[:, :7], range(1, 8), range(4, 7))
    ax = flow_diagram(nodes, edges, cell=0.13)
    plt.close(ax.figure)


def test_numbers_drawn_in_a_tile_are_the_arrays():
    ax = flow_diagram([array_node("tile", np.array([4.0, 0.5]), (0, 0), show_numbers=True)], [])
    texts = {t.get_text() for t in _texts(ax.figure)}
    plt.close(ax.figure)
    assert {"4", "0.5", "(2,)"} <= texts, texts


def test_a_note_sits_under_its_shape_at_any_scale():
    """A box's note is placed below its shape label's lines in points, so a diagram drawn at a smaller scale (its
    boxes closer together) never puts the note over the shape (16's map, before: "BPE (14)" over "(T) = (5,)")."""
    for width in (2, 10, 20):  # a wider diagram is drawn at a smaller scale
        ax = flow_diagram([array_node("ids", np.arange(5), (0, 0), dims=("T",), note="BPE (14)"),
                           step_node("far", (width, 0))], [], cell=0.28)
        renderer = ax.figure.canvas.get_renderer()
        shape, note = (next(t for t in ax.texts if t.get_text().startswith(start)) for start in ("(T)", "BPE"))
        assert note.get_window_extent(renderer).y1 <= shape.get_window_extent(renderer).y0 + 1, width
        plt.close(ax.figure)


@pytest.mark.parametrize("labels, slanted", [
    (["E₀", "L₁", "I₂", "F₃", "P₄", "J₅", "N₆", "A₇", "P₈", "J₉", "N₁₀", "A₁₁"], True),  # 11's: neighbours would meet
    ([str(k) if k % 5 == 0 else "" for k in range(30)], False),             # sparse labels have room
    (["a", "b", "c"], False),
])
def test_heatmap_slants_column_labels_only_when_neighbours_would_meet(labels, slanted):
    fig, ax = plt.subplots(figsize=(2.4 if len(labels) == 12 else 4.6, 2.4))
    plotting.heatmap(np.zeros((2, len(labels))), ["x", "y"], labels, ax=ax, colorbar=False, annotate=False)
    assert (ax.get_xticklabels()[0].get_rotation() != 0) == slanted
    plt.close(fig)
