"""`run.py slides` (tools/slides.py): one deck per notebook, built from the core path.

The fast tests read the decks' HTML: the optional cells are left out, every heading opens a slide, the
equations are MathML and the figures embedded, and nothing points at the network. The browser test
(tests/browser/test_slides_in_browser.py) opens them in headless Chromium with the network blocked.
"""

from __future__ import annotations

import ast
import base64
import html
import json
import re

import nbformat
import pytest
from tool_loader import ROOT, load_tool

slides = load_tool("slides")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# 13 has optional cells and a widget; 03, 09 and 12 ask their predictions in three ways (a cell of its own,
# a dict of ..., the check in the same cell)
SAMPLE = [path for path in NOTEBOOKS if path.name[:2] in {"02", "03", "09", "12", "13"}]
UNFILLED_VERDICTS = ("is not filled in yet", "not implemented yet", "no prediction yet")


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    return {path.stem: path for path in slides.build(out, {p.name[:2] for p in SAMPLE})}


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_a_deck_is_the_core_path_one_slide_per_heading(decks, notebook):
    page = decks[notebook.stem].read_text(encoding="utf-8")
    shown = set(re.findall(r'id="cell-id=([^"]+)"', page))
    for cell in cells(notebook):
        optional = "optional" in cell.get("metadata", {}).get("tags", [])
        split = any(c.startswith(f"{cell['id']}-") for c in shown)  # a markdown cell cut at its headings
        assert (cell["id"] in shown or split) != optional, (cell["id"], optional)
    headings = sum(len(slides.HEADING.findall("".join(c["source"]))) for c in cells(notebook)
                   if c["cell_type"] == "markdown" and "optional" not in c.get("metadata", {}).get("tags", []))
    opened = page.count('<section class="slide"')
    assert headings <= opened <= len(shown), (headings, opened)
    for section in re.split(r'<section class="slide"[^>]*>', page)[1:]:
        assert 'class="jp-Cell ' in section, "an empty slide"


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_a_deck_needs_no_network(decks, notebook):
    page = decks[notebook.stem].read_text(encoding="utf-8")
    assert "<math" in page and 'src="data:image/png;base64,' in page
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", page), "a resource from the network"
    assert "ArrowRight" in page and 'class="deck-counter"' in page
    assert not re.search(r"\$[^$\n]{1,80}\$", re.sub(r"<(code|pre|script|style)\b.*?</\1>", "", page, flags=re.S))


def test_core_path_cells_marks_slide_starts_and_caps_long_slides():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\nIntro.\n\n## Part one\n\nText."),
        *[nbformat.v4.new_code_cell(f"x = {k}") for k in range(slides.CELLS_PER_SLIDE)],
        nbformat.v4.new_markdown_cell("More text."),
        nbformat.v4.new_code_cell("y = 1"),
        nbformat.v4.new_markdown_cell("## Tangent", metadata={"tags": ["optional"]}),
        nbformat.v4.new_markdown_cell("A lone last paragraph stays on its slide."),
    ])
    out = slides.core_path_cells(nb).cells
    assert [c.source.splitlines()[0] for c in out if c.metadata["slide_start"]] == ["## Part one", "More text."]
    assert all("Tangent" not in c.source for c in out)


def slide_of_each_cell(page: str) -> dict:
    """The slide number of every cell id of a deck."""
    where = {}
    for k, section in enumerate(re.split(r'<section class="slide"[^>]*>', page)[1:]):
        for cell_id in re.findall(r'id="cell-id=([^"]+)"', section):
            where.setdefault(cell_id, k)
            where.setdefault(re.sub(r"-\d+$", "", cell_id), k)  # a long markdown cell cut in pieces: its first
    return where


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_a_prediction_is_on_one_slide_and_its_answer_on_the_next(decks, notebook):
    where = slide_of_each_cell(decks[notebook.stem].read_text(encoding="utf-8"))
    core = [c for c in cells(notebook) if "optional" not in c.get("metadata", {}).get("tags", [])]
    asked = 0
    for cell, following in zip(core, core[1:]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and slides.core_path.is_prediction(source):
            asked += 1
            if not slides.core_path.is_prediction("".join(following["source"])):
                assert where[following["id"]] == where[cell["id"]] + 1, (cell["id"], following["id"])
    assert asked >= 1


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_no_verdict_of_an_unfilled_answer_is_shown(decks, notebook):
    stored = json.dumps(cells(notebook))
    page = decks[notebook.stem].read_text(encoding="utf-8")
    assert any(verdict in stored for verdict in UNFILLED_VERDICTS), "the notebook stores none: nothing tested"
    assert not [verdict for verdict in UNFILLED_VERDICTS if verdict in page]


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_speaker_notes_hold_the_guides_questions_for_the_notebook(decks, notebook):
    page = decks[notebook.stem].read_text(encoding="utf-8")
    notes = re.search(r'<template [^>]*class="deck-notes"[^>]*>(.*?)</template>', page, re.DOTALL)
    assert notes, "no speaker notes"
    text = re.sub(r"<math.*?</math>|<[^>]+>", " ", notes.group(1))
    questions = load_tool("answer_keys").discussion_questions((ROOT / "docs" / "teaching-guide.md").read_text(
        encoding="utf-8"), notebook.name[:2])
    assert questions and "Discussion" in text
    for question in questions:
        words = re.findall(r"[A-Za-z]{5,}", re.sub(r"\$[^$]*\$|`[^`]*`", " ", question))
        assert all(word in text for word in words[:6]), question


def test_core_path_cells_puts_the_answer_after_a_prediction_and_drops_unfilled_verdicts():
    import nbformat

    verdict = nbformat.v4.new_output("display_data", data={"text/html": "Not yet"})
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Predict"),
        nbformat.v4.new_code_cell("my_guess = ...   # your prediction"),
        nbformat.v4.new_code_cell("print(answer)"),
        nbformat.v4.new_code_cell("check_guess(my_guess)", outputs=[verdict]),
        nbformat.v4.new_code_cell("def my_f(x):\n    raise NotImplementedError\n\ncheck_f(my_f)", outputs=[verdict]),
        nbformat.v4.new_code_cell("check_f(wrong_f)   # a demonstration", outputs=[verdict]),
        nbformat.v4.new_code_cell("my_guess = 'a'\ncheck_guess(my_guess)", outputs=[verdict]),
    ])
    out = slides.core_path_cells(nb).cells
    assert [c.metadata["slide_start"] for c in out] == [False, False, True, False, False, False, False]
    assert [len(c.get("outputs", [])) for c in out[1:]] == [0, 0, 0, 0, 1, 1]


def test_the_guide_states_the_smallest_scale_the_decks_use():
    guide = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    assert f"at {round(slides.MIN_ZOOM * 100)} % of the full size or more" in guide
    assert f"code at {slides.SMALLEST_CODE_PX} px or more" in guide


def test_code_is_never_drawn_under_the_smallest_size_a_room_reads():
    assert slides.FONT_PX * slides.MIN_ZOOM >= slides.SMALLEST_CODE_PX


def test_a_long_code_cell_and_its_long_output_are_cut_into_pieces_a_slide_holds():
    source = "\n".join(f"x{k} = {k}" for k in range(30))
    printed = "".join(f"line {k}\n" for k in range(40))
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR" + (1).to_bytes(4, "big") + (1000).to_bytes(4, "big") + bytes(5)
    figure = {"output_type": "display_data", "metadata": {},  # a PNG 1000 pixels tall (its header is enough)
              "data": {"image/png": base64.b64encode(header).decode(), "text/plain": "<Figure>"}}
    cell = nbformat.v4.new_code_cell(source, outputs=[nbformat.v4.new_output("stream", text=printed),
                                                      nbformat.from_dict(figure)])
    cell.id = "long"
    pieces = slides.pieces_of(cell)
    assert "".join(piece.source for piece in pieces) == source  # nothing lost, nothing repeated
    assert all(slides.visual_lines(piece.source) <= slides.LINES_PER_PIECE for piece in pieces)
    texts = [out["text"] for piece in pieces for out in piece.outputs if out.get("output_type") == "stream"]
    assert "".join(texts) == printed and all(slides.visual_lines(text) <= slides.LINES_PER_PIECE for text in texts)
    for piece in pieces:  # each piece fits a slide; an output without its source shows no empty input box
        used = slides.visual_lines(piece.source) + sum(map(slides.output_lines, piece.outputs))
        assert used <= slides.SLIDE_LINES or len(piece.outputs) == 1, piece
        assert piece.source or piece.metadata["transient"]["remove_source"]
    assert slides.output_lines(figure) == -(-min(1000, slides.FIGURE_PX) // (1.5 * slides.FONT_PX))  # 1000 px tall
    assert len({piece.id for piece in pieces}) == len(pieces)
    short = nbformat.v4.new_code_cell("x = 1")
    assert slides.pieces_of(short) == [short]


def test_a_long_list_is_cut_between_its_items_never_inside_code():
    items = "".join(f"- item {k}: " + "word " * 30 + "\n" for k in range(6))
    pieces = slides.markdown_pieces("**A list.**\n" + items)
    assert len(pieces) > 1 and all(piece.lstrip("*A list.\n").startswith("- item") for piece in pieces[1:])
    assert "\n\n".join(pieces).count("- item") == 6
    fenced = "```\n" + "".join(f"- not an item {k} " + "word " * 30 + "\n" for k in range(6)) + "```"
    assert slides.markdown_pieces(fenced) == [fenced]


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_no_deck_draws_an_emoji(decks, notebook):
    page = decks[notebook.stem].read_text(encoding="utf-8")
    assert not slides.EMOJI_CHARS.search(page), slides.EMOJI_CHARS.search(page)
    assert slides.without_emoji("\u274c Not yet \U0001f4a1 Hint \U0001f680 go") == "Not yet Hint [rocket] go"


def code_cells(notebook):
    return ["".join(c["source"]) for c in cells(notebook)
            if c["cell_type"] == "code" and "optional" not in c.get("metadata", {}).get("tags", [])]


def test_a_long_comment_wraps_at_its_own_indentation_and_a_long_line_hangs_inside_its_brackets():
    source = ("def f(values):\n"
              "    total = combine(values, weights, offsets, scale, another_argument, and_one_more)  # " + "why " * 12
              + "\n    # " + "a long comment line " * 6 + "\n"
              "    return print(f\"{total:.2f} is the total of the values after the scaling and the offsets, "
              "all of them\")\n")
    shown = slides.display_source(source)
    assert ast.dump(ast.parse(shown)) == ast.dump(ast.parse(source))
    for line in shown.splitlines():
        # One string literal on its own line may stay long: Python 3.12 on reads an f-string as parts, which the
        # display leaves whole (the other test allows the same: a long field of an f-string).
        one_string = re.fullmatch(r"\s*f?\"[^\"]*\"\)*", line) is not None
        assert len(line) <= slides.CHARS_PER_LINE or one_string, line
        assert line.startswith("    ") or line.startswith("def "), "a line back at the left margin"
    comments = [line for line in shown.splitlines() if line.lstrip().startswith("#")]
    assert len(comments) >= 3 and all(line.startswith("    # ") for line in comments)
    assert "    total = combine(" in shown and "\n        " in shown  # the rest of the line hangs 4 spaces in
    assert slides.display_source("%timeit f(x)  # " + "word " * 30) == "%timeit f(x)  # " + "word " * 30  # a magic
    short = "x = 1  # short\n"
    assert slides.display_source(short) == short


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_no_comment_on_a_slide_is_wider_than_a_slide_and_the_code_means_the_same(notebook):
    """Every core-path code cell as a slide shows it: the same syntax tree, no comment wider than a slide (the
    browser would wrap it to the left margin), and a long line left only where Python allows no break (a long
    field of an f-string)."""
    for source in code_cells(notebook):
        shown = slides.display_source(source)
        try:
            tree = ast.dump(ast.parse(source))
        except SyntaxError:  # a magic: shown as it is
            assert shown == source
            continue
        assert ast.dump(ast.parse(shown)) == tree
        for line in shown.splitlines():
            if len(line) > slides.CHARS_PER_LINE:
                assert "#" not in line.split('"')[-1] and line.lstrip().startswith(("f\"", "f'", "name", "verdict")) \
                    or "f\"" in line, line


def test_the_speaker_notes_of_a_slide_are_its_own(decks):
    """Each slide has notes of its own (what to say and ask there), made from its cells: no two slides of a deck
    have the same notes, and each slide's notes quote something the slide shows."""
    for notebook in SAMPLE:
        page = decks[notebook.stem].read_text(encoding="utf-8")
        sections = re.findall(r"<section class=\"slide\" data-notes=(?:'([^']*)'|\"([^\"]*)\")>(.*?)"
                              r"(?=<section class=\"slide\"|</main>)", page, re.DOTALL)
        assert len(sections) == page.count('<section class="slide"'), "a slide without notes"
        notes = [json.loads(html.unescape(single or double)) for single, double, _ in sections]
        sections = [(None, body) for _, _, body in sections]
        assert len({json.dumps(n) for n in notes}) == len(notes), f"{notebook.name}: two slides share their notes"
        for note, (_, body) in zip(notes, sections):
            assert note and all(kind and text for kind, text in note)
            alts = " ".join(a + b for a, b in re.findall(r"""\balt=(?:"([^"]*)"|'([^']*)')""", body))  # in words
            shown = re.sub(r"\W", "", re.sub(r"<math.*?</math>|<[^>]+>", " ", html.unescape(body + alts)).lower())
            words = re.findall(r"\w+", " ".join(text for _, text in note).lower())
            runs = {"".join(words[k:k + 3]) for k in range(len(words) - 2)}  # three words in a row, as shown
            assert any(run in shown for run in runs), (notebook.name, note)
        kinds = {kind for note in notes for kind, _ in note}
        assert {"Say", "Walk through"} <= kinds and kinds & {"Ask for a prediction", "Reveal", "Ask"}, kinds


def test_slide_notes_ask_for_the_prediction_and_give_the_exercises_hint():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Predict the largest weight\n\nWhich key wins the row? Write it down."),
        nbformat.v4.new_code_cell("my_guess = ...   # one of 'a', 'b' or 'c'"),
        nbformat.v4.new_code_cell("print(weights.argmax())"),
        nbformat.v4.new_markdown_cell("## Exercise\n\n**Exercise 03.2: a stable softmax.** Write `f(x)`.\n\n"
                                      "Hint: subtract the row's max first."),
        nbformat.v4.new_code_cell("def f(x):\n    raise NotImplementedError\n\ncheck_f(f)"),
    ])
    out = slides.core_path_cells(nb).cells
    notes = [json.loads(c.metadata["slide_notes"]) for c in out if "slide_notes" in c.metadata]
    assert len(notes) == 3
    first, reveal, exercise = (dict(n) for n in notes)
    assert first["Say"].startswith("Predict the largest weight") and first["Ask"] == "Which key wins the row?"
    assert "my_guess" in first["Ask for a prediction"] and "one of 'a', 'b' or 'c'" in first["Ask for a prediction"]
    assert "weights.argmax()" in reveal["Reveal"]
    assert exercise["Exercise"].startswith("Exercise 03.2") and "subtract the row's max" in exercise[
        "Hint to give first"]


def test_a_figure_is_drawn_large_enough_for_its_smallest_text_as_far_as_a_slide_allows():
    def png(width, height, dpi=90):
        phys = (round(dpi / 0.0254)).to_bytes(4, "big") * 2 + b"\x01"
        data = (b"\x89PNG\r\n\x1a\n" + (13).to_bytes(4, "big") + b"IHDR" + width.to_bytes(4, "big")
                + height.to_bytes(4, "big") + bytes(5) + bytes(4) + (9).to_bytes(4, "big") + b"pHYs" + phys + bytes(4)
                + bytes(4) + b"IDAT")
        return base64.b64encode(data).decode()

    assert slides.png_header(png(600, 300))[:2] == (600, 300) and round(slides.png_header(png(600, 300))[2]) == 90
    small = slides.figure_size(png(600, 300))  # fits when enlarged: its 10 pt text measures 18 px
    assert small == (864, 432) and round(slides.figure_text_px(png(600, 300), small[0]), 1) == slides.SMALLEST_FIGURE_PX
    wide = slides.figure_size(png(1600, 400))  # as wide as a slide allows, no wider
    assert wide[0] == slides.FIGURE_WIDTH_PX and slides.figure_text_px(png(1600, 400), wide[0]) < 18
    tall = slides.figure_size(png(500, 900))
    assert tall[1] == slides.FIGURE_PX
    page = slides.sized_figures(f'<img alt="a figure" src="data:image/png;base64,{png(600, 300)}"/>')
    assert 'style="width: 864px"' in page and 'data-dpi="90"' in page and page.endswith("/>")
    report = slides.figure_report({"03"})
    assert report and all(drawn <= slides.FIGURE_WIDTH_PX for *_, drawn, _ in report)


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_a_figure_is_on_a_slide_of_its_own_drawn_for_its_measured_text(decks, notebook):
    """A slide with a figure shows that figure only (no prose or code beside it, so the slide is never scaled down
    to fit), sized for the smallest text measured in it (``data-pt``)."""
    page = decks[notebook.stem].read_text(encoding="utf-8")
    points = slides.measured_points(notebook)
    figures = 0
    for section in re.split(r'<section class="slide"[^>]*>', page)[1:]:
        images = re.findall(r'<img\b[^>]*src="data:image/png;base64,([^"]+)"[^>]*data-pt="([^"]+)"', section)
        figures += len(images)
        if images:
            assert len(images) == 1 and "jp-MarkdownCell" not in section, notebook.name
            assert not re.search(r'class="jp-InputArea', section), f"{notebook.name}: code beside a figure"
            (png, pt), = images
            assert float(pt) == points.get(png, slides.FIGURE_TEXT_PT)
            assert f'style="width: {slides.figure_size(png, float(pt))[0]}px"' in section
    assert figures


def test_no_figure_draws_text_over_text():
    """No figure of any notebook (optional ones too) draws a text or a box over another, by more than 1.5 px each
    way: a label over a label, a note over a shape, a tick over the next tick. Measured with the font sizes, from
    the texts and boxes matplotlib drew (``tools/slides.py --measure``: a record's fourth item names the pairs)."""
    record = json.loads(slides.FIGURE_TEXT.read_text(encoding="utf-8"))
    over = {key: entry[3] for key, entry in record.items() if len(entry) > 3 and entry[3]}
    assert not over, f"figures with text drawn over text (move or shrink one, then --measure again): {over}"


def test_each_figures_smallest_text_measures_18_px_on_a_slide():
    """Each core-path figure's smallest text, measured from the text matplotlib drew (``tools/slides.py --measure``,
    which executes the notebooks) times the scale the slide draws the PNG at (a slide of its own, never scaled
    down: ``figure_report``), is at least ``SMALLEST_FIGURE_PX`` at 1280x720."""
    rows = slides.figure_report()
    record = json.loads(slides.FIGURE_TEXT.read_text(encoding="utf-8"))
    unmeasured = []
    for number, cell_id, width, height, *_ in rows:
        entries = [v for k, v in record.items() if k.split("/")[0] == cell_id]
        if [width, height] not in [v[:2] for v in entries]:
            unmeasured.append(f"{number} {cell_id}")
    assert not unmeasured, f"figures drawn again since measured: python tools/slides.py --measure NN ({unmeasured})"
    under = {cell_id: round(px, 1) for number, cell_id, *_, px in rows if px < slides.SMALLEST_FIGURE_PX - 0.05}
    assert not under, ("figure text under 18 px on a slide: draw these narrower or their text larger "
                       "(python tools/slides.py --figures says how wide each may be)", under)
