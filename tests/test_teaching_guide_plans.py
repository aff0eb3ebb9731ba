"""The teaching guide's minute figures all come from tools/core_path.py, and its lesson plans add up.

Every figure sits in a ``<!-- core-path NAME -->`` span that ``python tools/core_path.py --write-guide``
rewrites from the notebooks; these tests fail while a span is stale, when a notebook has no core-path line
in its section, when a minute figure is typed outside a span, or when a plan's rows do not add up to its
stated length. Nothing here names a notebook's minutes: they are whatever the notebooks give.
"""

from __future__ import annotations

import json
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


PRESENT = TOOL.notebooks()  # the notebooks of this checkout: a plan for a notebook not written yet is not shown
ACTIVE = [name for names in TOOL.tracks().values() for name in names]


def plans():
    """(plan name, its length in minutes, the plan's markdown in the guide) for every plan of the series as it is
    (a plan for a notebook still being written is checked once the notebook is in ``notebooks/``)."""
    found = []
    for name, plan in TOOL.PLANS.items():
        match = re.search(rf"<!-- core-path plan {name} -->(.*?)<!-- /core-path -->", GUIDE, re.DOTALL)
        assert match, f"the guide does not show plan {name!r}"
        if name in ACTIVE:
            found.append((name, plan["length"], match.group(1)))
        else:
            assert match.group(1) == "", f"plan {name!r} is for notebooks {plan['requires']} that are not there"
    return found


def part_minutes(label):
    return ALL_MINUTES[label]


def test_the_guide_has_its_tracks_and_a_two_day_plan_and_every_session_starts_with_setup():
    assert "Two days of 3 hours" in TOOL.TRACKS and len(TOOL.TRACKS) >= 4
    for track, sessions in TOOL.tracks().items():
        assert f"### {track}" in GUIDE or f": {track[0].lower()}{track[1:]}" in GUIDE, track
        assert sessions, f"track {track!r} has no plan for the notebooks there"
        for name in sessions:
            plan = TOOL.PLANS[name]
            assert plan["length"] == 180 and plan["rows"][0][0] == "setup" and plan["rows"][0][1] >= 10, name
    assert set(TOOL.PLANS) == {name for sessions in TOOL.TRACKS.values() for name in sessions}


def labels_in(text):
    """The notebook or part label a plan's table cell (or homework item) opens with, or None."""
    known = sorted([*MINUTES, *TOOL.PARTS], key=len, reverse=True)
    return next((label for label in known if text.strip().startswith(label + " ")), None)


@pytest.mark.parametrize("title, length, text", plans(), ids=[p[0] for p in plans()])
def test_each_plan_adds_up_and_fills_80_to_95_percent_of_its_slot(title, length, text):
    rows = re.findall(r"^\| (\d:\d\d)-(\d:\d\d) \| ([^|]+) \|", text, flags=re.MULTILINE)
    assert rows and clock(rows[0][0]) == 0
    for (_, end, _), following in zip(rows, rows[1:]):
        assert end == following[0], "no gap, no overlap"
    durations = [clock(end) - clock(start) for start, end, _ in rows]
    assert sum(durations) == length == clock(rows[-1][1]), title
    taught = sum(d for (_, _, what), d in zip(rows, durations) if not what.startswith("wrap-up"))
    low, high = TOOL.FILL
    assert low * length <= taught <= high * length, f"{title}: fills {taught} of {length} min ({taught / length:.0%})"
    assert (taught, length) == TOOL.plan_fill(title, ALL_MINUTES)
    for (_, _, what), duration in zip(rows, durations):
        stated = re.search(r"\((\d+) min\)", what)
        assert stated is None or int(stated.group(1)) == duration, what
        if what.startswith("exercises of "):
            label = labels_in(what[len("exercises of "):])
            assert duration == ALL_MINUTES[label]["exercise"] * TOOL.RATES["exercise"] > 0, what
        elif what.startswith("recap of "):
            recapped = re.findall(r"\d\d(?: §[\w-]+)?", what.split("(")[0])
            assert recapped and duration == len(recapped) * TOOL.RATES["recap"], what
        elif labels_in(what):
            assert duration == ALL_MINUTES[labels_in(what)]["walkthrough_minutes"], what
    for when in ("Before", "After"):
        found = re.search(rf"\*\*{when} the \w+\*\* \(homework, self-paced, (\d+) min\): (.*)", text)
        if found:
            parts = [int(n) for n in re.findall(r"\((\d+) min", found.group(2))]
            assert int(found.group(1)) == sum(parts)


def placed(text):
    """The notebooks and parts a plan's markdown teaches in the room, those it gives as homework before it, and
    those after it, and the notebooks and parts it recaps."""
    room = {labels_in(cell) for cell in re.findall(r"^\| \d:\d\d-\d:\d\d \| ([^|]+) \|", text, re.MULTILINE)}
    lines = {when: " ".join(line for line in text.splitlines() if line.startswith(f"**{when}"))
             for when in ("Before", "After")}
    homework = {when: {label for label in ALL_MINUTES
                       if re.search(rf"\b{re.escape(label)} [A-Z][^()]*\(\d+ min", line)
                       or re.search(rf"\(\d+ min: {re.escape(label)},", line)} for when, line in lines.items()}
    recap = " ".join(re.findall(r"^\| [^|]+ \| recap of ([^|(]+)", text, re.MULTILINE))
    recapped = set(re.findall(r"\d\d(?: §[\w-]+)?", recap))
    return room - {None}, homework["Before"], homework["After"], recapped


def covered(labels):
    """The notebooks wholly placed by ``labels`` (a notebook, or every one of its parts)."""
    return {n for n in MINUTES if n in labels or (n in TOOL.SPLITS and
                                                   all(label in labels for label, *_ in TOOL.SPLITS[n]))}


def test_every_notebook_has_a_place_and_the_order_rules_hold():
    """The tracks one after another, and the two days, each place every notebook (or every part of it), in the room
    or as homework (with its minutes); no session holds more than two of 09, 10 and 11; 09 comes no later than 10;
    14 is in every schedule; the two days teach 05 and 07 in the room, with at most an evening's homework between
    them; a session after homework recaps it."""
    texts = {name: text for name, _, text in plans()}
    active = TOOL.tracks()
    tracks = [name for track, names in active.items() if not track.startswith("Two days") for name in names]
    schedules = {"the tracks": tracks, "two days": active["Two days of 3 hours"]}
    for schedule, names in schedules.items():
        order, in_room, after = [], set(), set()
        for name in names:
            room, before, later, recapped = placed(texts[name])
            assert len({label[:2] for label in room} & {"09", "10", "11"}) <= 2, name
            assert (before | after) <= recapped, f"{name} builds on homework {sorted(before | after)} without a " \
                                                 f"recap of it (recaps {sorted(recapped)})"
            order += sorted(room | before | later)
            in_room |= room
            after = later
        assert covered(order) == set(MINUTES), (schedule, set(MINUTES) - covered(order))
        first = {n: min(k for k, label in enumerate(order) if label[:2] == n) for n in ("09", "10", "14")}
        assert first["09"] <= first["10"], schedule
    assert {"05", "07"} <= in_room, "the two-day plan teaches neither queries, keys and values nor the mask in the room"
    day1 = texts[active["Two days of 3 hours"][0]]
    evening = re.search(r"\*\*After the \w+\*\* \(homework, self-paced, (\d+) min\)", day1)
    assert evening is None or int(evening.group(1)) <= TOOL.EVENING, "more homework than an evening between the days"


def test_every_split_point_is_a_heading_cell_of_its_notebook_and_the_parts_add_up():
    """A notebook is cut at a cell id (a reworded heading cannot move the cut); the parts tile the notebook; their
    walk-through and self-paced minutes and their discussion questions add up to the notebook's; each part holds
    at least its exercises' minutes (the old heading-text split gave the rest of 10, with three exercises, 2 min)."""
    assert set(TOOL.SPLITS) <= set(PRESENT)
    for number, parts in TOOL.SPLITS.items():
        cells = {cell["id"]: cell for cell in json.loads(PRESENT[number].read_text(encoding="utf-8"))["cells"]}
        assert parts[0][1] is None and len(parts) >= 2, number
        parts = [(label, TOOL.present_id(list(cells), start), *rest) for label, start, *rest in parts]
        for label, start, _, _ in parts[1:]:
            assert start in cells, f"{label}: notebook {number} has no cell {start!r}"
            cell = cells[start]
            assert cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith("#"), (label, start)
        ids = list(cells)
        assert [ids.index(start) for _, start, _, _ in parts[1:]] == sorted(ids.index(s) for _, s, _, _ in parts[1:])
        labels = [label for label, *_ in parts]
        for key in ("walkthrough_minutes", "self_paced_minutes", "estimated_self_paced_minutes", "exercise"):
            assert sum(ALL_MINUTES[label][key] for label in labels) == MINUTES[number][key], (number, key)
        asked = TOOL.part_questions(number, QUESTIONS.get(number, 0))
        assert min(asked) >= 0 and sum(asked) == QUESTIONS.get(number, 0), (number, asked)
        for label in labels:
            m = ALL_MINUTES[label]
            assert m["self_paced_minutes"] >= m["exercise"] * TOOL.RATES["exercise"], label
    assert ALL_MINUTES["10 §8-9"]["self_paced_minutes"] >= 3 * TOOL.RATES["exercise"]
    with pytest.raises(KeyError, match="no cell with id"):
        TOOL.core_path(PRESENT["10"], stop="## 8. Bridge to PyTorch")


def test_a_plan_for_a_notebook_being_written_appears_when_the_notebook_does(tmp_path):
    """Track 3 has a session for notebook 17 once ``notebooks/16_*.ipynb`` exists, and its other version until
    then; the guide shows only the plans of the notebooks there (the real plans are checked above, on the
    notebooks of this checkout)."""
    waiting = {name for name, plan in TOOL.PLANS.items() if plan["requires"]}
    assert waiting and all(TOOL.NOTEBOOK_17 in TOOL.PLANS[name]["requires"] for name in waiting)
    assert any(row[0] == TOOL.NOTEBOOK_17 for name in waiting for row in TOOL.PLANS[name]["rows"])
    (tmp_path / "notebooks").mkdir()
    for path in PRESENT.values():
        (tmp_path / "notebooks" / path.name).write_bytes(path.read_bytes())
    with_16 = TOOL.tracks(tmp_path)
    if TOOL.NOTEBOOK_17 not in PRESENT:
        assert not waiting & set(ACTIVE)
        fake = next(iter(PRESENT.values())).read_bytes()
        (tmp_path / "notebooks" / f"{TOOL.NOTEBOOK_17}_written_later.ipynb").write_bytes(fake)
        with_16 = TOOL.tracks(tmp_path)
    shown = {name for names in with_16.values() for name in names}
    assert waiting <= shown and not any(TOOL.PLANS[name]["unless"] for name in shown)
    minutes = TOOL.series_minutes(GUIDE, tmp_path)
    names = TOOL.titles(GUIDE)
    for name in waiting:
        assert TOOL.render_plan(name, minutes, names).count("| 0:00-0:10 | setup |") == 1


def test_the_fill_table_shows_every_plan_with_its_share():
    table = TOOL.fill_table(ALL_MINUTES)
    for name in ACTIVE:
        used, length = TOOL.plan_fill(name, ALL_MINUTES)
        assert f"| {name} | {used} | {length} | {used / length:.0%} |" in table


def test_the_calibration_table_says_how_each_figure_is_known():
    """Its header names no figure "measured"; every row says whether it was timed with a learner or walked by a
    teacher without a clock, and the tool's column is marked as estimated by the rates."""
    header = next(line for line in GUIDE.splitlines() if line.startswith("| notebooks | how |"))
    assert "how we know" in header and "measured" not in header and TOOL.ESTIMATED in header
    column = header.strip("|").split("|").index(" how we know ")
    table = re.search(r"<!-- core-path calibration -->(.*?)<!-- /core-path -->", GUIDE, re.DOTALL).group(1)
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()]
    assert len(rows) == len(TOOL.MEASURED)
    for row, (_, _, _, _, who, _) in zip(rows, TOOL.MEASURED):
        assert row[column].strip() == TOOL.HOW_WE_KNOW[who], row
        assert ("timed" in row[column]) == (who != "room walk"), row


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
            alone = TOOL.timed_alone(number, m["self_paced_exact"])
            assert m["self_paced_minutes"] == max(m["estimated_self_paced_minutes"], alone)
    # at a learner's pace: 95 timed minutes on an estimate of 73 is 1.3 times the estimate, whatever 05 is today
    rows = [row for row in TOOL.calibration() if row[0] == ("05",) and row[1] == "self"]
    assert rows and all(row[2] >= row[6] for row in rows)
    pace = max(row[2] / row[6] for row in rows)
    assert TOOL.timed_alone("05", 60.0) == round(60 * pace) > 60
    assert TOOL.timed_alone("02", 60.0) == 0  # nobody timed 02


def test_discussion_questions_and_activities_count_in_class_only():
    nb = TOOL.notebooks()
    assert MINUTES["05"]["pair work"] == 1 and MINUTES["11"]["derivation"] == 2 and MINUTES["09"]["derivation"] == 1
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
    with pytest.raises(ValueError, match="more than the"):
        TOOL.plan_rows("transformer 3", {n: {"walkthrough_minutes": 160} for n in [*MINUTES, *TOOL.PARTS]})
