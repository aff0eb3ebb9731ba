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
MINUTES = TOOL.series_minutes(GUIDE, ROOT)
QUESTIONS = TOOL.discussion_questions(GUIDE)


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
    """(plan name, its length in minutes, the plan's markdown in the guide) for every plan of the tool."""
    found = []
    for name, plan in TOOL.PLANS.items():
        match = re.search(rf"<!-- core-path plan {name} -->(.*?)<!-- /core-path -->", GUIDE, re.DOTALL)
        assert match, f"the guide does not show plan {name!r}"
        found.append((name, plan["length"], match.group(1)))
    return found


def part_minutes(label):
    notebook, until, _ = TOOL.PARTS[label]
    return TOOL.core_path(TOOL.notebooks()[notebook], until, QUESTIONS[notebook])


def test_the_guide_has_a_three_session_plan_and_a_two_day_plan():
    sessions = [name for name in TOOL.PLANS if name.startswith("session")]
    assert len(sessions) == 3 and all(TOOL.PLANS[name]["length"] == 180 for name in sessions)
    assert "### Three sessions of 3 hours (00-14)" in GUIDE and "### Two days of 3 hours" in GUIDE
    assert "Day 1 is session 1 above" in GUIDE and TOOL.PLANS["day 2"]["rows"] == TOOL.PLANS["session 2"]["rows"]


@pytest.mark.parametrize("title, length, text", plans(), ids=[p[0] for p in plans()])
def test_each_plan_adds_up_to_its_stated_length_and_leaves_its_slack(title, length, text):
    rows = re.findall(r"^\| (\d:\d\d)-(\d:\d\d) \| ([^|]+) \|", text, flags=re.MULTILINE)
    assert rows and clock(rows[0][0]) == 0
    for (_, end, _), following in zip(rows, rows[1:]):
        assert end == following[0], "no gap, no overlap"
    durations = [clock(end) - clock(start) for start, end, _ in rows]
    assert sum(durations) == length == clock(rows[-1][1]), title
    taught = sum(d for (_, _, what), d in zip(rows, durations) if not what.startswith("wrap-up"))
    assert taught <= 0.9 * length, f"{title}: {taught} of {length} min taught, less than 10 % slack"
    for (_, _, what), duration in zip(rows, durations):
        stated = re.search(r"\((\d+) min\)", what)
        assert stated is None or int(stated.group(1)) == duration, what
        number = what.strip()[:2]
        part = next((label for label in TOOL.PARTS if what.strip().startswith(label + " ")), None)
        if part:  # a part of a notebook, up to a heading
            assert duration == part_minutes(part)["walkthrough_minutes"], what
        elif number in MINUTES and "recap" not in what:
            assert duration == MINUTES[number]["walkthrough_minutes"], what
    for when in ("Before", "After"):
        found = re.search(rf"\*\*{when} the \w+\*\* \(homework, self-paced, (\d+) min\): (.*)", text)
        if found:
            parts = [int(n) for n in re.findall(r"\((\d+) min", found.group(2))]
            assert int(found.group(1)) == sum(parts)


def placed(text):
    """The notebooks a plan's markdown teaches in the room, and those it gives as homework."""
    room = set(re.findall(r"^\| \d:\d\d-\d:\d\d \| (\d\d) ", text, flags=re.MULTILINE))
    homework = set(re.findall(r"\b(\d\d) [A-Z][^()]*\(\d+ min", " ".join(
        line for line in text.splitlines() if line.startswith("**"))))
    return room, homework


def test_every_notebook_has_a_place_and_the_order_rules_hold():
    """Three sessions and the two days place every notebook, in the room or as homework (with its minutes);
    no session holds more than two of 09, 10 and 11; 09 comes no later than 10; 14 is in every plan."""
    schedules = {"three sessions": ["session 1", "session 2", "session 3"], "two days": ["session 1", "day 2"]}
    for schedule, names in schedules.items():
        order = []
        for name in names:
            text = dict((n, t) for n, _, t in plans())[name]
            room, homework = placed(text)
            assert len(room & {"09", "10", "11"}) <= 2, name
            order += sorted(room | homework)
        assert set(order) == set(MINUTES), (schedule, set(MINUTES) - set(order))
        assert order.index("09") <= order.index("10") and "14" in order, schedule


def test_the_rates_are_calibrated_within_ten_percent_and_the_guide_states_them():
    then = TOOL.measured_minutes()  # the notebooks as the learner timed them
    if then is None:
        pytest.skip(f"this clone has no commit {TOOL.MEASURED_AT} (a shallow clone): the calibration needs it")
    for numbers, kind, low, high, estimate in TOOL.calibration(then):
        assert 0.9 * low <= estimate <= 1.1 * high, (numbers, kind, low, high, estimate)
    rates = TOOL.RATES
    stated = [f"{rates['words_per_minute']} words a minute alone and {rates['words_per_minute_in_class']} in class",
              f"{rates['code'] * 60:.0f} s per code cell", f"{rates['exercise']:.0f} min per exercise",
              f"{rates['derivation']:.0f} min per hard derivation", f"{rates['discussion']:.0f} min per discussion",
              f"{rates['pair work']:.0f} min per pair-work activity"]
    assert all(text in GUIDE for text in stated), [text for text in stated if text not in GUIDE]


def test_discussion_questions_and_activities_count_in_class_only():
    nb = TOOL.notebooks()
    assert MINUTES["05"]["pair work"] == 1 and MINUTES["11"]["derivation"] == 3 and MINUTES["09"]["derivation"] == 1
    bare = TOOL.core_path(nb["03"], discussion=0)
    asked = TOOL.core_path(nb["03"], discussion=4)
    assert asked["walkthrough_minutes"] - bare["walkthrough_minutes"] in (11, 12, 13)  # 4 x 3 min, rounded
    assert asked["self_paced_minutes"] == bare["self_paced_minutes"]
    for number in {number for _, number, _ in TOOL.ACTIVITIES}:  # a renamed heading would drop its minutes
        listed = sum(where == number for _, where, _ in TOOL.ACTIVITIES)
        assert MINUTES[number]["derivation"] + MINUTES[number]["pair work"] == listed, number


def test_a_notebook_that_does_not_fit_moves_to_the_homework():
    minutes = {n: dict(m, walkthrough_minutes=m["walkthrough_minutes"] + 10) for n, m in MINUTES.items()}
    minutes.update({label: part_minutes(label) for label in TOOL.PARTS})
    plan = dict(TOOL.PLANS["session 2"], flex=["09"])
    TOOL.PLANS["flexible"] = plan
    try:
        rows, moved = TOOL.plan_rows("flexible", minutes)
        assert moved == ["09"] and rows[-1][1] == 180 and all(label != "09" for _, _, label, _ in rows)
        names = TOOL.titles(GUIDE)
        assert f"09 {names['09']}" in TOOL.render_plan("flexible", minutes, names).split("**After")[-1]
    finally:
        del TOOL.PLANS["flexible"]
    with pytest.raises(ValueError, match="more than its"):
        TOOL.plan_rows("session 3", {n: {"walkthrough_minutes": 80} for n in [*MINUTES, *TOOL.PARTS]})
