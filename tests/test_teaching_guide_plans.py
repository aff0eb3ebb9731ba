"""The teaching guide's minute figures all come from tools/core_path.py, and its lesson plans add up.

Every figure sits in a ``<!-- core-path NAME -->`` span that ``python tools/core_path.py --write-guide``
rewrites from the notebooks; these tests fail while a span is stale, when a notebook has no core-path line
in its section, when a minute figure is typed outside a span, or when a plan's rows do not add up to its
stated length. Nothing here names a notebook's minutes: they are whatever the notebooks give.
"""

from __future__ import annotations

import re

import pytest
from tool_loader import ROOT, load_tool

GUIDE = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
TOOL = load_tool("core_path")
MINUTES = {number: TOOL.core_path(path) for number, path in TOOL.notebooks(ROOT).items()}


def clock(text: str) -> int:
    hours, mins = text.split(":")
    return 60 * int(hours) + int(mins)


def test_every_span_of_the_guide_is_what_the_tool_computes_now():
    assert TOOL.render_guide(GUIDE, ROOT) == GUIDE, "run: python tools/core_path.py --write-guide"
    assert TOOL.main(["--check-guide"]) == 0


@pytest.mark.parametrize("number", sorted(MINUTES))
def test_every_notebook_has_its_core_path_line_in_its_section(number):
    match = re.search(rf"^### {number} · .*?(?=^##)", GUIDE, flags=re.MULTILINE | re.DOTALL)
    assert match, f"the guide has no section '### {number} · ...'"
    m = MINUTES[number]
    assert (f"<!-- core-path {number} -->**Core path:** {m['self_paced_minutes']} min self-paced, "
            f"{m['walkthrough_minutes']} min walk-through.<!-- /core-path -->") in match.group(0)


def test_no_minute_figure_is_typed_outside_a_span():
    outside = TOOL.SPAN.sub("", GUIDE)
    typed = [m.group(0) for m in re.finditer(r"[^\n]{0,40}\b\d+(?:[-–]\d+)?\s*(?:min|minutes?)\b(?! per)", outside)]
    assert not typed, f"minute figures not written by tools/core_path.py: {typed}"
    assert "nine notebooks" not in GUIDE


def test_the_tool_finds_the_predictions_of_every_notebook():
    assert all(m["prediction"] >= 1 for m in MINUTES.values()), {n: m["prediction"] for n, m in MINUTES.items()}


def test_is_prediction_tells_predictions_from_exercises():
    assert TOOL.is_prediction("my_share = ...   # your prediction")
    assert TOOL.is_prediction('my_prediction = ...   # "a", "b" or "c"\ncheck_sink_prediction(my_prediction)')
    assert TOOL.is_prediction("my_cache_gib = ...   # your prediction in GiB\ncheck_cache_prediction(my_cache_gib)")
    assert TOOL.is_prediction('my_prediction = {\n    "without positions": ...,\n}')
    assert not TOOL.is_prediction("my_T = ...   # your answer\ncheck_num_tokens(my_T)")
    assert not TOOL.is_prediction("def f(x):\n    raise NotImplementedError\ncheck_f(f)")


def plans():
    """(title, stated length in minutes, the plan's markdown) for every plan of the guide."""
    found = []
    for match in re.finditer(r"^### (A (\d+)-(minute|hour) [^\n]*)\n(.*?)(?=^##)", GUIDE, re.MULTILINE | re.DOTALL):
        length = int(match.group(2)) * (60 if match.group(3) == "hour" else 1)
        found.append((match.group(1), length, match.group(4)))
    return found


def test_the_guide_has_the_plans_of_both_days():
    titles = [title for title, _, _ in plans()]
    assert len(titles) == len(TOOL.PLANS) == 4, titles


@pytest.mark.parametrize("title, length, text", plans(), ids=[p[0][:30] for p in plans()])
def test_each_plan_adds_up_to_its_stated_length(title, length, text):
    rows = re.findall(r"^\| (\d:\d\d)-(\d:\d\d) \| ([^|]+) \|", text, flags=re.MULTILINE)
    assert rows and clock(rows[0][0]) == 0
    for (_, end, _), following in zip(rows, rows[1:]):
        assert end == following[0], "no gap, no overlap"
    durations = [clock(end) - clock(start) for start, end, _ in rows]
    assert sum(durations) == length == clock(rows[-1][1]), title
    for (_, _, what), duration in zip(rows, durations):
        stated = re.search(r"\((\d+) min\)", what)
        assert stated is None or int(stated.group(1)) == duration, what
        number = what.strip()[:2]
        part = next((label for label in TOOL.PARTS if what.strip().startswith(label + " ")), None)
        if part:  # a part of a notebook, up to a heading
            notebook, until = TOOL.PARTS[part]
            assert duration == TOOL.core_path(TOOL.notebooks()[notebook], until)["walkthrough_minutes"], what
        elif number in MINUTES and "recap" not in what:
            assert duration == MINUTES[number]["walkthrough_minutes"], what
    before = re.search(r"\*\*Before the \w+\*\* \(self-paced, (\d+) min\): (.*)", text)
    if before:
        parts = [int(n) for n in re.findall(r"\((\d+) min", before.group(2))]
        assert int(before.group(1)) == sum(parts)


def test_a_notebook_that_does_not_fit_moves_to_the_homework():
    minutes = {n: dict(m, walkthrough_minutes=m["walkthrough_minutes"] + 10) for n, m in MINUTES.items()}
    rows, moved = TOOL.plan_rows("day2-180", minutes)
    assert moved and rows[-1][1] == 180 and all(label not in moved for _, _, label, _ in rows)
    names = TOOL.titles(GUIDE)
    assert f"{moved[-1]} {names[moved[-1]]}" in TOOL.render_plan("day2-180", minutes, names).split("**After")[-1]
    with pytest.raises(ValueError, match="more than its"):
        TOOL.plan_rows("day2-90", {n: {"walkthrough_minutes": 80} for n in [*MINUTES, *TOOL.PARTS]})
