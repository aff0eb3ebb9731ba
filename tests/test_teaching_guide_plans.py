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
ALL_MINUTES = TOOL.series_minutes(GUIDE, ROOT)  # the notebooks, and the parts of notebooks the plans use
MINUTES = {number: m for number, m in ALL_MINUTES.items() if number not in TOOL.PARTS}
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
    return ALL_MINUTES[label]


def test_the_guide_has_its_tracks_and_a_two_day_plan_and_every_session_starts_with_setup():
    assert "Two days of 3 hours" in TOOL.TRACKS and len(TOOL.TRACKS) >= 4
    for track, sessions in TOOL.TRACKS.items():
        assert f"### {track}" in GUIDE or f": {track[0].lower()}{track[1:]}" in GUIDE, track
        for name in sessions:
            plan = TOOL.PLANS[name]
            assert plan["length"] == 180 and plan["rows"][0][0] == "setup" and plan["rows"][0][1] >= 10, name
    assert set(TOOL.PLANS) == {name for sessions in TOOL.TRACKS.values() for name in sessions}


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
    """The tracks one after another, and the two days, each place every notebook, in the room or as homework (with
    its minutes); no session holds more than two of 09, 10 and 11; 09 comes no later than 10; 14 is in every
    schedule; the two days teach 10 or 14 in the room."""
    texts = {name: text for name, _, text in plans()}
    tracks = [name for track, names in TOOL.TRACKS.items() if not track.startswith("Two days") for name in names]
    schedules = {"the tracks": tracks, "two days": TOOL.TRACKS["Two days of 3 hours"]}
    for schedule, names in schedules.items():
        order, in_room = [], set()
        for name in names:
            room, homework = placed(texts[name])
            assert len(room & {"09", "10", "11"}) <= 2, name
            order += sorted(room | homework)
            in_room |= room
        assert set(order) == set(MINUTES) - set(TOOL.PARTS), (schedule, set(MINUTES) - set(order))
        assert order.index("09") <= order.index("10") and "14" in order, schedule
    assert in_room & {"10", "14"}, "the two-day plan teaches neither the block nor the tiny GPT in the room"


def test_the_rates_are_calibrated_and_the_guide_states_them():
    """Each estimate within ``TOLERANCE`` of what it is calibrated against (30 % of each learner timed alone, who
    differ by half again; 10 % of the in-class walk), on the notebooks of each row's commit."""
    commits = {row[-1] for row in TOOL.MEASURED}
    if any(TOOL.measured_minutes(commit) is None for commit in commits):
        pytest.skip(f"this clone lacks one of the commits {sorted(commits)} (a shallow clone): the calibration "
                    "needs them")
    for numbers, kind, low, high, who, _, estimate in TOOL.calibration():
        tolerance = TOOL.TOLERANCE[kind]
        assert (1 - tolerance) * low <= estimate <= (1 + tolerance) * high, (numbers, kind, who, low, high, estimate)
    rates = TOOL.RATES
    stated = [f"{rates['words_per_minute']} words a minute alone and {rates['words_per_minute_in_class']} in class",
              f"{rates['code'] * 60:.0f} s per code cell", f"{rates['exercise']:.0f} min per exercise",
              f"{rates['prediction']:.0f} min per prediction alone and {rates['prediction in class']:.0f} in class",
              f"{rates['derivation']:.0f} min per hard derivation alone and "
              f"{rates['derivation in class']:.0f} in class",
              f"{rates['discussion']:.0f} min per discussion", f"{rates['pair work']:.0f} min per pair-work activity",
              f"{rates['setup']:.0f} min per session for setup, at its start"]
    assert all(text in GUIDE for text in stated), [text for text in stated if text not in GUIDE]
    assert "(an estimate)" in GUIDE and "(timed)" in GUIDE  # which figures are walked, which are estimates


def test_a_notebook_that_a_learner_took_longer_on_gets_the_learners_minutes():
    for number, m in MINUTES.items():
        if number not in TOOL.PARTS:
            assert m["self_paced_minutes"] == max(m["estimated_self_paced_minutes"], TOOL.timed_alone(number))
    assert TOOL.timed_alone("05") >= 95 and MINUTES["05"]["self_paced_minutes"] >= 95


def test_discussion_questions_and_activities_count_in_class_only():
    nb = TOOL.notebooks()
    assert MINUTES["05"]["pair work"] == 1 and MINUTES["11"]["derivation"] == 3 and MINUTES["09"]["derivation"] == 1
    bare = TOOL.core_path(nb["03"], discussion=0)
    asked = TOOL.core_path(nb["03"], discussion=4)
    assert asked["walkthrough_minutes"] - bare["walkthrough_minutes"] in (15, 16, 17)  # 4 x 4 min, rounded
    assert asked["self_paced_minutes"] == bare["self_paced_minutes"]
    for number in {number for _, number, _ in TOOL.ACTIVITIES}:  # a renamed heading would drop its minutes
        listed = sum(where == number for _, where, _ in TOOL.ACTIVITIES)
        assert MINUTES[number]["derivation"] + MINUTES[number]["pair work"] == listed, number


def test_a_notebook_that_does_not_fit_moves_to_the_homework():
    minutes = {n: dict(m, walkthrough_minutes=m["walkthrough_minutes"] + 40) for n, m in MINUTES.items()}
    minutes.update({label: part_minutes(label) for label in TOOL.PARTS})
    plan = dict(TOOL.PLANS["transformer 1"], flex=["09"])
    TOOL.PLANS["flexible"] = plan
    try:
        rows, moved = TOOL.plan_rows("flexible", minutes)
        assert moved == ["09"] and rows[-1][1] == 180 and all(label != "09" for _, _, label, _ in rows)
        names = TOOL.titles(GUIDE)
        assert f"09 {names['09']}" in TOOL.render_plan("flexible", minutes, names).split("**After")[-1]
    finally:
        del TOOL.PLANS["flexible"]
    with pytest.raises(ValueError, match="more than its"):
        TOOL.plan_rows("transformer 3", {n: {"walkthrough_minutes": 160} for n in [*MINUTES, *TOOL.PARTS]})
