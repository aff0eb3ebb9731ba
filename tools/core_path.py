#!/usr/bin/env python3
"""Estimate the minutes a learner needs for the core path of a notebook (every cell not tagged ``optional``).

    python tools/core_path.py notebooks/03_softmax.ipynb [...]
    python tools/core_path.py --write-guide    # rewrite every minute figure of docs/teaching-guide.md
    python tools/core_path.py --check-guide    # exit 1 if a figure of the guide differs from this tool's

An estimate, not a stopwatch: it adds up what a learner (self-paced) or a class (walk-through)
does on the core path, at rates stated here so that anyone can disagree with them and re-run it.

- reading prose and equations: 105 words a minute alone (careful technical reading, re-reading
  included), 130 in class (the pace of a teacher talking it through);
- each code cell: 45 s to run it and read its output; each figure: 1 min more to look at it;
  each live widget: 2 min to move its controls;
- each predict-then-run question: 2 min alone, 5 min in class (30 people think, write, and some say why);
- each fill-in exercise: 6 min (a first attempt, one hint, a second attempt), self-paced only;
- each hard derivation (``ACTIVITIES``: the softmax's Jacobian, attention's backward pass,
  RoPE's algebra, layer norm's backward pass, a block's backward pass): 7 min more alone, 13 in class;
- in class only: 4 min per discussion question of the teaching guide (its "Discussion" item of the
  notebook's section, one question per question mark), 15 min per pair-work activity (05's example by
  hand), and ``setup`` minutes at the start of every session (everyone opens the notebook and runs its
  first cell).

Calibration (``MEASURED``): what was timed, each with who timed it and on which commit's notebooks (read
with git, so that the estimate compares like with like however the notebooks grew since). Two learners
worked alone through some notebooks cell by cell (one new to the maths, one an engineer with one ML
course): they differ by half again, so the self-paced estimate must fall within 30 % of each, and a
notebook that a learner took longer on than the estimate gets the learner's minutes in the guide
(``timed_alone``): the learner's pace on the notebook as it was then (timed minutes over the estimate of that
commit's notebook), applied to today's estimate, so a notebook that was cut since keeps that learner's pace, not
the minutes of the longer text. In class, a teacher of 30 walked a plan minute by minute (an estimate, not a class
timed): the estimate must fall within 10 % of it (``calibration()`` gives them all, the guide shows them;
a test keeps it so).

Every minute figure of the teaching guide comes from here: it sits between the marks
``<!-- core-path NAME -->`` and ``<!-- /core-path -->``, and ``--write-guide`` rewrites it
(``NN``: a notebook's core-path line; ``NN walk``/``NN self``: its two numbers; ``count``,
``range``, ``total walk``, ``total self``: the whole series; ``calibration``: the rows of the table of
measured against estimated minutes; ``plan NAME``: a lesson plan of ``PLANS`` below).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "teaching-guide.md"

RATES = {"words_per_minute": 105, "words_per_minute_in_class": 130, "code": 0.75, "figure": 1.0, "widget": 2.0,
         "prediction": 2.0, "exercise": 6.0, "derivation": 7.0,
         "prediction in class": 5.0, "derivation in class": 13.0, "discussion": 4.0, "pair work": 15.0, "setup": 10}
RATES["recap"] = RATES["prediction in class"]  # per notebook recapped: one question on it, asked as a prediction

#: What a class spends extra time on, found by the heading that opens it in the notebook's core path:
#: (kind, notebook, the start of the heading line).
ACTIVITIES = [
    ("derivation", "09", "## Relative positions: RoPE"),
    ("derivation", "11", "## 1. The softmax's backward pass"),
    ("derivation", "11", "## 2. Backwards through attention"),
    ("derivation", "14", "### Layer norm"),
    ("derivation", "14", "### The feed-forward network, attention, the residuals: one block"),
    ("pair work", "05", "## A complete example by hand"),
    # In pairs, by hand: PE_p . PE_(p+k) for d_model = 4 at two starting positions (one computes, one checks);
    # a 2-token, 3-feature layer norm per token and (the mistake) per feature;
    # the induction circuit traced token by token on "A B C ... A ->"; top-k and top-p sets of one distribution;
    # the four entries of dL/dA for notebook 11's 2 x 2 product (one computes an entry, one checks it in the cell).
    ("pair work", "09", "### The dot product depends only on the offset"),
    ("pair work", "10", "### The mistake: normalising per feature over the tokens"),  # a 2 x 3 layer norm both ways
    ("pair work", "11", "## 6. Induction: two heads that compose"),
    ("pair work", "11", "### One matrix product backwards, by hand"),
    ("pair work", "15", "## 2. Sampling: greedy, temperature, top-k, top-p"),
]

#: Who timed what (``WHO``): a learner working alone, or a teacher walking a plan minute by minute.
WHO = {"new to the maths": "a learner new to the maths, alone, cell by cell (timed)",
       "engineer": "an engineer with one ML course, alone, cell by cell (timed)",
       "first learner": "the first learner, alone (timed)",
       "room walk": "a teacher of 30 walking the plan minute by minute (an estimate)"}
#: How we know each figure (the calibration table's column): timed with a learner, or walked by a teacher
#: without a clock; the tool's own column is always an estimate by the rates.
HOW_WE_KNOW = {"new to the maths": "timed with a learner", "engineer": "timed with a learner",
               "first learner": "timed with a learner",
               "room walk": "the room walk: a teacher's estimate, minute by minute, no clock"}
ESTIMATED = "estimated by the rates"
#: What the rates are calibrated against: (notebooks or parts, "self" or "walk", low, high, who, commit).
MEASURED = [
    (("09",), "self", 75, 75, "first learner", "d834c49"), (("10",), "self", 75, 75, "first learner", "d834c49"),
    (("12",), "self", 80, 80, "first learner", "d834c49"), (("14",), "self", 110, 110, "first learner", "d834c49"),
    (("03",), "self", 55, 55, "new to the maths", "070cfe6"), (("05",), "self", 95, 95, "new to the maths", "070cfe6"),
    (("07",), "self", 75, 75, "new to the maths", "070cfe6"), (("09",), "self", 70, 70, "engineer", "070cfe6"),
    (("10",), "self", 80, 80, "engineer", "070cfe6"), (("12",), "self", 70, 70, "engineer", "070cfe6"),
    (("14",), "self", 95, 95, "engineer", "070cfe6"),
    (("03", "04", "05 §1-5"), "walk", 160, 165, "room walk", "070cfe6"),
    (("11",), "walk", 135, 135, "room walk", "070cfe6"), (("12 §1-6",), "walk", 55, 55, "room walk", "070cfe6"),
]
TOLERANCE = {"self": 0.30, "walk": 0.10}  # how far an estimate may be from what it is calibrated against


PREDICTION = re.compile(r"^(my_\w+) = (\.\.\.|\{)(.*)$", re.MULTILINE)


def is_prediction(source: str) -> bool:
    """Whether a code cell asks for a prediction: it assigns ``my_... = ...`` (or a dict of ``...``), either
    alone in its cell (the checker follows after the reveal, as in 00-08) or named a prediction by its variable
    or its comment (``my_prediction = ...``, ``my_cache_gib = ...   # your prediction in GiB``, as in 09-13)."""
    asks = [m for m in PREDICTION.finditer(source) if m.group(2) == "..." or "..." in source[m.end():]]
    if not asks:
        return False
    if not re.search(r"\bcheck_\w+\(", source):
        return True
    return any("predict" in m.group(1) or "predict" in m.group(3) for m in asks)


def discussion_questions(guide_text: str) -> dict:
    """The number of discussion questions of each notebook's section of the guide (its question marks)."""
    found = {}
    for number, body in re.findall(r"^### (\d\d) · .*?\n(.*?)(?=^##)", guide_text, re.MULTILINE | re.DOTALL):
        item = re.search(r"^- \*\*Discussion[^\n]*", body, re.MULTILINE)
        found[number] = item.group(0).count("?") if item else 0
    return found


def _cell_counts(cell, number: str) -> dict:
    """What one core-path cell asks of a learner (all zeros for an ``optional`` cell)."""
    counts = dict.fromkeys(("words", "code", "figure", "widget", "prediction", "exercise", "derivation",
                            "pair work"), 0)
    tags = cell.get("metadata", {}).get("tags", [])
    source = "".join(cell["source"])
    if "optional" in tags:
        return counts
    if cell["cell_type"] == "markdown":
        counts["words"] += len(re.findall(r"[A-Za-z]+", source))
        lines = source.splitlines()
        for kind, where, heading in ACTIVITIES:
            counts[kind] += where == number and any(line.startswith(heading) for line in lines)
    elif "nbval-ignore-output" in tags and ".show()" in source:  # a live widget (its view is not compared)
        counts["widget"] += 1
    else:
        counts["code"] += 1
        counts["figure"] += any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
        predicts = is_prediction(source)
        counts["prediction"] += predicts
        counts["exercise"] += not predicts and ("raise NotImplementedError" in source or bool(
            re.search(r"^\w+ = \.\.\.", source, re.MULTILINE) and re.search(r"\bcheck_\w+\(", source)))
    return counts


def _exact(counts: dict) -> tuple[float, float]:
    """The self-paced minutes and the walk-through minutes (without discussion) of ``counts``, unrounded."""
    both = sum(counts[kind] * RATES[kind] for kind in ("code", "figure", "widget"))
    self_paced = (counts["words"] / RATES["words_per_minute"] + both + counts["exercise"] * RATES["exercise"]
                  + counts["prediction"] * RATES["prediction"] + counts["derivation"] * RATES["derivation"])
    walkthrough = (counts["words"] / RATES["words_per_minute_in_class"] + both
                   + counts["prediction"] * RATES["prediction in class"]
                   + counts["derivation"] * RATES["derivation in class"] + counts["pair work"] * RATES["pair work"])
    return self_paced, walkthrough


def cell_ids(path) -> list:
    """The ids of the cells of the notebook at ``path``, in order."""
    return [cell.get("id") for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]]


def present_id(ids, cell_id):
    """A split point's cell id in a notebook whose cells are ``ids``: ``cell_id``, or the first of a tuple of ids
    that is there (a heading that moved to a new cell keeps the old commits' split, which the calibration reads)."""
    if isinstance(cell_id, tuple):
        return next((one for one in cell_id if one in ids), cell_id[0])
    return cell_id


def core_path(path, start=None, stop=None, discussion=None, timed=True) -> dict:
    """Counts of what the core path of the notebook at ``path`` asks of a learner, and the minutes they add up to
    (only the cells from the cell with id ``start`` up to, not including, the cell with id ``stop``, if given: a
    cell id stays when a heading is reworded; an unknown id raises). ``discussion``: the number of discussion
    questions asked in class (in these cells), by default those of the notebook's section of the guide. With
    ``timed``, the self-paced minutes of a whole notebook rise to a learner's timed minutes where those are more
    (``timed_alone``); ``estimated_self_paced_minutes`` is the estimate alone. Use ``part_minutes`` for parts
    that must add up."""
    number = Path(path).name[:2]
    if discussion is None:
        discussion = discussion_questions(GUIDE.read_text(encoding="utf-8")).get(number, 0)
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    ids = [cell.get("id") for cell in cells]
    start, stop = (present_id(ids, cell_id) for cell_id in (start, stop))
    for name, cell_id in (("start", start), ("stop", stop)):
        if cell_id is not None and cell_id not in ids:
            raise KeyError(f"{Path(path).name} has no cell with id {cell_id!r} ({name})")
    first = ids.index(start) if start is not None else 0
    last = ids.index(stop) if stop is not None else len(cells)
    counts = {"words": 0, "code": 0, "figure": 0, "widget": 0, "prediction": 0, "exercise": 0, "derivation": 0,
              "pair work": 0}
    for cell in cells[first:last]:
        for kind, n in _cell_counts(cell, number).items():
            counts[kind] += n
    self_paced, walk = _exact(counts)
    walkthrough = walk + discussion * RATES["discussion"]
    estimate = round(self_paced)
    alone = timed_alone(number, self_paced) if timed and start is None and stop is None else 0
    return {**counts, "discussion": discussion, "walkthrough_minutes": round(walkthrough),
            "self_paced_minutes": max(estimate, alone), "estimated_self_paced_minutes": estimate,
            "walkthrough_exact": walkthrough, "self_paced_exact": self_paced}


def _apportion(exact: list, total: int) -> list:
    """Whole minutes for parts whose unrounded minutes are ``exact``, scaled to add up to ``total`` (rounded
    cumulatively, so that no part loses or gains more than a minute)."""
    scale = total / sum(exact) if sum(exact) else 0.0
    marks = [round(scale * sum(exact[:k + 1])) for k in range(len(exact))]
    marks[-1] = total
    return [b - a for a, b in zip([0, *marks], marks)]


def part_minutes(path, discussion=None, timed=True, as_walked=False) -> dict:
    """The minutes of each part of ``SPLITS`` of the notebook at ``path``: label -> dict like ``core_path``'s, each
    part with its own discussion questions (``part_questions``), the parts' walk-through and self-paced minutes
    adding up to the whole notebook's (a learner's timed minutes, where they raise the whole, spread over the
    parts in proportion). ``as_walked``: the first part asks all the questions, as the plans the room walk
    walked did (for the calibration only)."""
    number = Path(path).name[:2]
    if number not in SPLITS:
        return {}
    if discussion is None:
        discussion = discussion_questions(GUIDE.read_text(encoding="utf-8")).get(number, 0)
    labels = [label for label, *_ in SPLITS[number]]
    whole = core_path(path, discussion=discussion, timed=timed)
    parts = [core_path(path, *PARTS[label][1:3], discussion=asked, timed=False)
             for label, asked in zip(labels, [discussion, *[0] * (len(labels) - 1)] if as_walked
                                     else part_questions(number, discussion))]
    walks = _apportion([p["walkthrough_exact"] for p in parts], whole["walkthrough_minutes"])
    selfs = _apportion([p["self_paced_exact"] for p in parts], whole["self_paced_minutes"])
    estimates = _apportion([p["self_paced_exact"] for p in parts], whole["estimated_self_paced_minutes"])
    return {label: {**part, "walkthrough_minutes": walk, "self_paced_minutes": alone,
                    "estimated_self_paced_minutes": estimate}
            for label, part, walk, alone, estimate in zip(labels, parts, walks, selfs, estimates)}


#: A notebook whose content had another number when it was timed: today's number -> the number it had then.
TIMED_AS = {"15": "14"}  # the two halves of the tiny GPT were notebook 14


def timed_alone(number: str, estimate: float) -> int:
    """The minutes of the slowest learner timed alone on notebook ``number`` (0 if nobody was), at their pace:
    ``estimate`` (today's unrounded self-paced estimate) times their timed minutes over the estimate of the notebook
    they worked through (as at that row's commit)."""
    then = TIMED_AS.get(number, number)
    return max([round(estimate * low / estimated) for numbers, kind, low, _, who, _, estimated in calibration()
                if numbers == (then,) and kind == "self" and who != "room walk" and estimated], default=0)


def series_minutes(guide_text: str, root=ROOT, timed=True, as_walked=False) -> dict:
    """``core_path`` of every notebook of the series and of every part of ``PARTS``, with its discussion questions
    from ``guide_text``."""
    questions = discussion_questions(guide_text)
    paths = notebooks(root)
    minutes = {number: core_path(path, discussion=questions.get(number, 0), timed=timed)
               for number, path in paths.items()}
    for number in SPLITS:
        if number in paths:
            minutes.update(part_minutes(paths[number], questions.get(number, 0), timed, as_walked))
    return minutes


def measured_minutes(commit: str, root=ROOT) -> dict | None:
    """``series_minutes`` (estimates only) of the notebooks and guide as they were at ``commit`` (read with git): the
    calibration compares like with like, however the notebooks grew since. None without that history."""
    def show(path):
        done = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{path}"], capture_output=True)
        return done.stdout.decode("utf-8") if done.returncode == 0 else None

    listed = subprocess.run(["git", "-C", str(root), "ls-tree", "--name-only", commit, "notebooks/"],
                            capture_output=True, text=True)
    names = [Path(line).name for line in listed.stdout.split() if re.match(r"notebooks/\d\d_.*\.ipynb$", line)]
    guide = show("docs/teaching-guide.md")
    if listed.returncode or not names or guide is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "notebooks").mkdir()
        for name in names:
            (Path(folder) / "notebooks" / name).write_text(show(f"notebooks/{name}"), encoding="utf-8")
        return series_minutes(guide, Path(folder), timed=False, as_walked=True)


@functools.cache
def calibration(root=ROOT) -> list:
    """``(notebooks, kind, measured low, measured high, who, commit, estimated)`` for every row of ``MEASURED``, the
    estimate made on the notebooks of that row's commit (on today's notebooks when the clone lacks it)."""
    key = {"self": "estimated_self_paced_minutes", "walk": "walkthrough_minutes"}
    cache, rows = {}, []
    for numbers, kind, low, high, who, commit in MEASURED:
        if commit not in cache:
            cache[commit] = measured_minutes(commit, root)
        minutes = cache[commit] or series_minutes(GUIDE.read_text(encoding="utf-8"), root, False, True)
        rows.append((numbers, kind, low, high, who, commit, sum(minutes[n][key[kind]] for n in numbers)))
    return rows


#: Where a plan cuts a notebook in parts, each keyed to the id of the cell that opens it (a cell id stays when a
#: heading is reworded; a test checks that every id exists and opens a heading): notebook -> its parts in order,
#: each (label, id of its first cell or None for the notebook's start, what it holds, how many of the notebook's
#: discussion questions of the guide are about it; the last part asks the rest). The parts tile the notebook and
#: their minutes add up to the whole (``part_minutes``).
SPLITS = {
    "05": [("05 §1-5", None, "the example by hand, the creature grid", 4),
           ("05 exercises", "05-040", "exercises 05.1-05.3", None)],
    "10": [("10 §1-7", None, "the residual stream, layer norm, the feed-forward network, stacking", 5),
           ("10 §8-9", "10-049", "the bridge to PyTorch, dropout and the exercises", None)],
    "11": [("11 §1", None, "the softmax's backward pass", 0),
           ("11 §2-7", "11-011", "backwards through attention, training live, induction", None)],
    "12": [("12 §1-6", None, "the model, its tokens, the head view and fingerprints", 3),
           ("12 §7-9", "12-ab-1", "removing a head, *apple* in two sentences, exercise 12.3", None)],
    "13": [("13 §1-3", None, "the cost measured, the online softmax, tiled attention", 3),
           ("13 §4a", "13-026", "the KV cache", 1),
           ("13 §4b-5", "13-032", "the cost per generated token, grouped-query attention, the exercises", None)],
    "15": [("15 §1", None, "training on real text", 2),
           ("15 §2 on", "15-035b", "the next-token distribution, sampling, its heads, from GPT-2 to Llama", None)],
    "16": [("16 §1-3", None, "the GGUF file, one 4-bit block by hand, the model is yours", 3),
           ("16 §4 on", "16-026", "its heads measured, the exercises", None)],
}
#: label -> (notebook, id of its first cell or None, id of the first cell after it or None, what it holds)
PARTS = {label: (number, start, parts[k + 1][1] if k + 1 < len(parts) else None, what)
         for number, parts in SPLITS.items() for k, (label, start, what, _) in enumerate(parts)}


def part_questions(number: str, questions: int) -> list:
    """How many of the ``questions`` discussion questions of notebook ``number`` each of its parts asks."""
    listed = [asked for *_, asked in SPLITS[number][:-1]]
    listed = [min(asked, questions - sum(listed[:k])) for k, asked in enumerate(listed)]
    return [*listed, questions - sum(listed)]

# ---------------------------------------------------------------------------------------------
# The teaching guide's lesson plans: what happens in each row is written here, the minutes come from the
# notebooks. A row is (label, minutes, what to do): a notebook row has its two-digit number (or a label of
# PARTS) as label and None as minutes (its walk-through minutes); a recap row has the notebooks it recaps as
# minutes (``RATES["recap"]`` each); an exercises row ("exercises NN", "exercises", ...) takes the exercises of
# notebook (or part) NN in the room, in pairs (``RATES["exercise"]`` each); "rest" gives a row the minutes left
# at the end (the wrap-up). A plan fills ``FILL`` of its slot (everything but the wrap-up): a notebook in "flex"
# moves to the homework when the rows would fill more than its top (the first of "flex" first); a row in "fill"
# (in-room exercises) is taught only while the plan stays within ``TARGET``.

FILL = (0.80, 0.95)  # the share of every slot a plan fills: the rest is questions, a slow start, a setup that fails
TARGET = 0.90  # a "fill" row is taught in the room only while the plan stays within this share of its slot
EVENING = 60  # the most self-paced homework between two consecutive days (minutes): an evening, not a weekend

SETUP = ("setup", RATES["setup"], "Everyone opens the notebook and runs its first cell (on a laptop, Binder, Colab or "
                                   "the hub); fix what does not start now, not halfway through.")
BREAK = ("break", 10, "")
RECAP_WHAT = ("One question on each, put to the room as a prediction (think, write, a few say why): what last "
              "time or the homework left unclear comes out before the session builds on it.")


def recap(*numbers, what=RECAP_WHAT):
    """A recap row: one question on each of ``numbers`` (notebooks or parts), ``RATES["recap"]`` minutes each."""
    return ("recap", tuple(numbers), what)


def exercises(label, what="In pairs, while you can help: one computes, one checks; hints before solutions."):
    """A row for the exercises of notebook (or part) ``label`` in the room, ``RATES["exercise"]`` minutes each."""
    return (f"exercises {label}", "exercises", what)


def session(*rows, title, before=(), after=(), flex=(), fill=(), when="session", requires=(), unless=()):
    """A 3-hour plan: setup, then ``rows``, then a wrap-up with the minutes left. ``title``: the line that opens
    it in the guide; ``requires``/``unless``: the plan is in the guide only while these notebooks exist / do not
    exist (a track can hold a plan for a notebook still being written)."""
    return {"length": 180, "title": title, "when": when, "before": list(before), "after": list(after),
            "flex": list(flex), "fill": list(fill), "requires": list(requires), "unless": list(unless),
            "rows": [SETUP, *rows, ("wrap-up", "rest", "Questions; the exercises that did not fit, started in "
                                                       "pairs while you can help.")]}


#: The tracks a teacher chooses from (each session a week apart, say), then the two-day plan. A track may list
#: plans for two versions of the series (``requires``/``unless``): only those for the notebooks there are shown.
TRACKS = {
    "The attention core (00-08)": ["core 1", "core 2", "core 3"],
    "The transformer (09-11)": ["transformer 1", "transformer 2", "transformer 3"],
    "Language models (12 on)": ["models 1 of 3", "models 2 of 3", "models 3 of 3",
                                "models 1 of 4", "models 2 of 4", "models 3 of 4", "models 4 of 4"],
    "Two days of 3 hours": ["day 1", "day 2"],
}
NOTEBOOK_17 = "17"  # attention in today's models: its track 3 session appears once the notebook is in the series
PLANS = {
    "core 1": session(
        recap("00", "01", what="What the homework set up: the notation table of 00, and one question on 01's "
                               "embeddings (which two words are closest, and why)."),
        ("02", None, "A loop of dot products, then `X @ X.T`; predict the largest score of \"journey\"."),
        ("03", None, "Why dividing by the sum fails; the overflow demo; the temperature slider; **which axis**; "
                     "predict where \"one\" puts its weight as $\\tau \\to 0$; spot the slip together."),
        BREAK,
        ("04", None, "The weighted sum as arrows; the whole weight-free recipe; predict what doubling $X$ does; "
                     "what it cannot do."),
        title="Session 1: scores and the softmax.",
        before=[("00", "including the setup check, so that nobody installs in the room"), ("01", "")], flex=["04"]),
    "core 2": session(
        ("05", None, "The hand-worked example in pairs (one computes, one checks with code); predict which rows "
                     "change; spot the slip; the creature grid."),
        exercises("05", "Spot the slip, exercise 05.1 and the keys of *roamed* (05.3) in pairs, while you can help."),
        BREAK,
        ("06", None, "Why $\\sqrt{d_k}$: the variance argument, the saturated softmax, the vanishing gradient."),
        title="Session 2: queries, keys and values, and why $\\sqrt{d_k}$.", flex=["06"], fill=["exercises 05"]),
    "core 3": session(
        ("07", None, "No peeking: the mask before the softmax; padding and the fully masked row."),
        exercises("07", "Exercise 07.1 and masked attention (07.2) in pairs, while you can help."),
        BREAK,
        ("08", None, "Heads as a loop, then split, attend, merge; predict the shape of `weights`; the designed head "
                     "and the random one; the parameter count."),
        title="Session 3: masks and heads.", fill=["exercises 07"]),
    "transformer 1": session(
        recap("05", "06", "07", "08", what="A class that knows attention: one question on each of queries, keys "
                                           "and values, the scaling, the mask and the heads, before positions "
                                           "change them."),
        ("09", None, "\"Dog bites man\": the same set of context vectors in every order; a learned table and the "
                     "sinusoidal encoding; in pairs, $PE_p \\cdot PE_{p+k}$ by hand for $d_{model} = 4$ at two "
                     "positions; predict how many words change; RoPE rotates queries and keys."),
        BREAK,
        exercises("09"),
        title="Session 1: word order.", fill=["exercises 09"]),
    "transformer 2": session(
        recap("09"),
        ("10", None, "The residual stream, layer norm per token (in pairs, a 2 x 3 example normalised both ways), "
                     "the feed-forward network, pre- vs post-norm, "
                     "stacking; GPT-2's parameter count from its configuration."),
        exercises("10"),
        BREAK,
        ("11 §1", None, "The softmax's Jacobian, three entries by hand first, then checked by finite differences."),
        title="Session 2: the block, and the first backward pass.", fill=["exercises 10"]),
    "transformer 3": session(
        recap("10", "11 §1"),
        ("11 §2-7", None, "In pairs, one matrix product backwards by hand (2 x 2); the backward pass of "
                          "attention; gradient checks; train *copy previous* live; predict the reverse task's pattern; "
                          "in pairs, the induction circuit traced token by token; the ablations of the optional "
                          "section 7 shown and discussed."),
        BREAK,
        exercises("11"),
        title="Session 3: how attention learns.", fill=["exercises 11"]),
    "models 1 of 3": session(
        ("12", None, "The hash check and WordPiece; the head view; measured head habits; predict the sink; weight is "
                     "not influence; removing a head."),
        BREAK,
        ("13 §1-3", None, "Time and memory like $T^2$, measured; the online softmax; tiled attention."),
        ("13 §4a", None, "The KV cache: what a step keeps, and why the cached scores equal the recomputed ones."),
        title="Session 1: a real pretrained model, and what attention costs. It needs the model files of notebook "
              "12: check before class that `load_minilm()` runs on the machines you use (see section 12).",
        flex=["13 §4a"], unless=[NOTEBOOK_17]),
    "models 2 of 3": session(
        ("13 §4b-5", None, "The cost per generated token; what grouped-query attention saves; the cache table."),
        ("14", None, "Byte-pair encoding, merge by merge; the whole backward pass, checked."),
        BREAK,
        ("15 §1", None, "Training on *Pride and Prejudice*: the loss against the unigram and the bigram."),
        title="Session 2: the cache, and a tiny GPT of your own.", flex=["15 §1"], unless=[NOTEBOOK_17]),
    "models 3 of 3": session(
        ("15 §2 on", None, "Sampling, temperature and top-p (in pairs, the top-k and top-p sets of one distribution "
                         "by hand); generating with the cache; its heads; from GPT-2 to Llama."),
        BREAK,
        ("16", None, "A real model from a GGUF file: one 4-bit block by hand; the tokenizer; the model from the "
                     "series' one block; chat; predict the sink, the induction layers and the cache; ablate the "
                     "induction heads."),
        title="Session 3: a real language model, run by your own code. It needs the model file of notebook 16: "
              "check before class that `load_smollm2()` runs on the machines you use (see section 15).",
        unless=[NOTEBOOK_17]),
    "models 1 of 4": session(
        ("12", None, "WordPiece, checked against Hugging Face; the head view; measured head habits; predict the sink; "
                     "weight is not influence; removing three heads."),
        exercises("12", "Exercise 12.3 in pairs, while you can help: one writes the diagonal, one checks it on the "
                        "head view."),
        BREAK,
        ("13 §1-3", None, "Time and memory like $T^2$, measured; the online softmax; tiled attention."),
        title="Session 1: a real pretrained model, and what attention costs. It needs the model files of notebook "
              "12: check before class that `load_minilm()` runs on the machines you use (see section 12).",
        fill=["exercises 12"], requires=[NOTEBOOK_17]),
    "models 2 of 4": session(
        ("13 §4a", None, "The KV cache: what a step keeps, and why the cached scores equal the recomputed ones."),
        ("13 §4b-5", None, "The cost per generated token; what grouped-query attention saves; the cache table."),
        exercises("13"),
        BREAK,
        ("14", None, "Byte-pair encoding, merge by merge; the whole backward pass, checked."),
        exercises("14"),
        title="Session 2: the KV cache, and a tiny GPT of your own.", fill=["exercises 13", "exercises 14"],
        requires=[NOTEBOOK_17]),
    "models 3 of 4": session(
        recap("14", what="One question on last session's notebook, put to the room as a prediction: which pair does "
                         "the first merge join, or why does the key bias get no gradient?"),
        ("15", None, "Training on *Pride and Prejudice*: the loss against the unigram and the bigram; sampling, "
                     "temperature and top-p (in pairs, the top-k and top-p sets of one distribution by hand); "
                     "generating with the cache; its heads; from GPT-2 to Llama."),
        exercises("15"),
        BREAK,
        ("16 §1-3", None, "A real model from a GGUF file: its 4-bit blocks; the tokenizer; the model from the series' "
                          "one block."),
        title="Session 3: the tiny GPT trained, and a real language model opened. It needs the model file of "
              "notebook 16: check before class that `load_smollm2()` runs on the machines you use (see section 15).",
        fill=["exercises 15"], requires=[NOTEBOOK_17]),
    "models 4 of 4": session(
        ("16 §4 on", None, "Chat; predict the sink, the induction layers and the cache; ablate the induction heads."),
        BREAK,
        (NOTEBOOK_17, None, "Attention in today's models: sliding windows and sinks, latent attention, linear "
                            "attention, sparse attention; what each keeps of the cache, and what it gives up."),
        exercises("16"),
        title="Session 4: attention in today's models.", fill=["exercises 16"], flex=["16 §4 on"],
        requires=[NOTEBOOK_17]),
    "day 1": session(
        recap("00", "01", what="What the homework set up: the notation table of 00, and one question on 01's "
                               "embeddings (which two words are closest, and why)."),
        ("02", None, "A loop of dot products, then `X @ X.T`; predict the largest score of \"journey\"."),
        ("03", None, "Why dividing by the sum fails; the overflow demo; the temperature slider; **which axis**; "
                     "spot the slip together."),
        BREAK,
        ("04", None, "The weighted sum as arrows; the whole weight-free recipe; what it cannot do (it is why day 2 "
                     "starts with trainable projections)."),
        title="Day 1: scores, the softmax and context vectors.",
        before=[("00", "including the setup check, so that nobody installs in the room"), ("01", "")],
        flex=["04"], when="workshop"),
    "day 2": session(
        ("05", None, "Queries, keys and values: the hand-worked example in pairs (one computes, one checks with "
                     "code); the scaling by $\\sqrt{d_k}$ as step 5 (notebook 06 says why, after the workshop); "
                     "predict which rows change; the creature grid."),
        BREAK,
        ("07", None, "No peeking: the mask before the softmax; padding and the fully masked row; masked attention "
                     "is the whole of a decoder's attention."),
        exercises("07", "Masked attention (07.2) in pairs, while you can help."),
        title="Day 2: queries, keys and values, and the causal mask.",
        after=["06", "08", "09", "10", "11", "12", "13", "14", "15", "16", NOTEBOOK_17], fill=["exercises 07"],
        when="workshop"),
}


def active(name: str, present) -> bool:
    """Whether plan ``name`` is part of the series whose notebooks are ``present`` (their numbers)."""
    plan = PLANS[name]
    return all(n in present for n in plan["requires"]) and not any(n in present for n in plan["unless"])


def tracks(root=ROOT) -> dict:
    """The tracks with the plans for the notebooks in ``root``."""
    present = notebooks(root)
    return {track: [name for name in names if active(name, present)] for track, names in TRACKS.items()}


def selection(argv, description: str, out: Path) -> argparse.Namespace:
    """The command line of a tool that writes something per notebook: ``[--out DIR] [NN ...]``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=out, help=f"output folder (default: {out.name}/)")
    parser.add_argument("numbers", nargs="*", help="only these notebooks, by number (e.g. 02 08)")
    args = parser.parse_args(argv)
    args.out, args.numbers = args.out.resolve(), set(args.numbers)
    return args


def notebooks(root=ROOT, numbers=None) -> dict:
    """The series' notebooks by their two-digit number (only those in ``numbers``, if given)."""
    return {path.name[:2]: path for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
            if not numbers or path.name[:2] in numbers}


def titles(guide_text: str) -> dict:
    """Each notebook's short title, from the guide's section headings "### NN · Title"."""
    return dict(re.findall(r"^### (\d\d) · (.+)$", guide_text, flags=re.MULTILINE))


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def _listing(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def row_minutes(row, minutes: dict) -> int:
    """The minutes of one plan row (0 for the wrap-up, which takes what is left)."""
    label, mins, _ = row
    if mins is None:
        return minutes[label]["walkthrough_minutes"]
    if mins == "exercises":
        return round(minutes[label.split(" ", 1)[1]]["exercise"] * RATES["exercise"])
    if isinstance(mins, tuple):
        return round(len(mins) * RATES["recap"])
    return 0 if mins == "rest" else mins


def plan_rows(name: str, minutes: dict) -> tuple[list, list]:
    """The rows ``(start, end, label, what)`` of plan ``name`` (in minutes from the start) and the notebooks
    moved to the homework because they did not fit."""
    plan = PLANS[name]
    rows, moved = [row for row in plan["rows"] if row[0] not in plan["fill"]], []
    flex = list(plan.get("flex", []))
    top = plan["length"] * FILL[1]

    def total(some):
        return sum(row_minutes(row, minutes) for row in some)

    while total(rows) > top:
        if not flex:
            raise ValueError(f"lesson plan {name!r} needs {total(rows)} min, more than the {FILL[1]:.0%} of its "
                             f"{plan['length']} min: put a notebook in its 'flex' list or shorten it")
        drop = flex.pop(0)
        rows = [row for row in rows if row[0] != drop and row[0] != f"exercises {drop}"]
        moved.append(drop)
    for label in plan["fill"]:  # in-room exercises, while the plan stays within TARGET
        row = next(row for row in plan["rows"] if row[0] == label)
        with_it = [r for r in plan["rows"] if r in rows or r is row]
        if label.split(" ", 1)[1] not in moved and total(with_it) <= plan["length"] * TARGET:
            rows = with_it
    timed, start = [], 0
    for row in rows:
        mins = plan["length"] - total(rows) if row[1] == "rest" else row_minutes(row, minutes)
        if mins:
            timed.append((start, start + mins, row[0], row[2]))
        start += mins
    return timed, moved[::-1]


def plan_fill(name: str, minutes: dict) -> tuple[int, int]:
    """The minutes plan ``name`` fills (every row but the wrap-up) and its slot's length."""
    rows, _ = plan_rows(name, minutes)
    return sum(end - start for start, end, label, _ in rows if label != "wrap-up"), PLANS[name]["length"]


def homework(label: str, minutes: dict, names: dict) -> tuple[str, int]:
    """What a homework item says and its self-paced minutes: a notebook, or a part of PARTS."""
    if label in PARTS:
        number, start, _, what = PARTS[label]
        mins = minutes[label]["self_paced_minutes"]
        where = "the rest of" if PARTS[label][2] is None and start else ("the start of" if not start else "part of")
        return f"{where} {number} {names.get(number, '')} ({mins} min: {label}, {what})", mins
    mins = minutes[label]["self_paced_minutes"]
    return f"{label} {names.get(label, '')} ({mins} min)", mins


def _shown(label, mins, start, end, names, minutes, rest) -> str:
    if mins == "exercises":
        number = label.split(" ", 1)[1]
        return f"exercises of {number} {names.get(number, '')} ({end - start} min)"
    if isinstance(mins, tuple):
        return f"recap of {_listing(list(mins))} ({end - start} min)"
    if label in minutes:
        return f"{label} {names.get(label, '')} ({end - start} min)"
    return f"{label} ({end - start} min)" if label in rest else label


def render_plan(name: str, minutes: dict, names: dict) -> str:
    """The markdown of plan ``name``: its title, what to do before, the minute-by-minute table, the homework after
    (only the notebooks of the series: a notebook not written yet is left out)."""
    plan, when = PLANS[name], PLANS[name]["when"]
    rows, moved = plan_rows(name, minutes)
    kinds = {row[0]: row[1] for row in plan["rows"]}
    lines = [plan["title"], ""]
    if plan["before"]:
        total = sum(minutes[n]["self_paced_minutes"] for n, _ in plan["before"])
        parts = [f"{n} {names[n]} ({minutes[n]['self_paced_minutes']} min{': ' + note if note else ''})"
                 for n, note in plan["before"]]
        lines += [f"**Before the {when}** (homework, self-paced, {total} min): {_listing(parts)}.", ""]
    lines += ["| time | notebook | what to do |", "| --- | --- | --- |"]
    rest = [label for label, mins, _ in plan["rows"] if mins == "rest"]
    for start, end, label, what in rows:
        shown = _shown(label, kinds[label], start, end, names, minutes, rest)
        lines.append(f"| {_clock(start)}-{_clock(end)} | {shown} |" + (f" {what} |" if what else " |"))
    after = [homework(label, minutes, names) for label in moved + list(plan["after"]) if label in minutes]
    if after:
        lines += ["", f"**After the {when}** (homework, self-paced, {sum(m for _, m in after)} min): "
                      f"{_listing([text for text, _ in after])}."]
    return "\n".join(lines)


def fill_table(minutes: dict, root=ROOT) -> str:
    """Every plan of the series in ``root`` with the minutes it fills and its share of the slot (``FILL``)."""
    lines = ["| plan | fills (min) | slot (min) | fill |", "| --- | --- | --- | --- |"]
    for names in tracks(root).values():
        for name in names:
            used, length = plan_fill(name, minutes)
            lines.append(f"| {name} | {used} | {length} | {used / length:.0%} |")
    return "\n".join(lines)


SPAN = re.compile(r"<!-- core-path (?P<name>[^>]*?) -->(?P<body>.*?)<!-- /core-path -->", re.DOTALL)


def guide_values(text: str, root=ROOT) -> dict:
    """What each span name of the guide stands for, computed from the notebooks."""
    paths = notebooks(root)
    minutes = series_minutes(text, root)
    names = titles(text)
    values = {"count": str(len(paths)), "range": f"{min(paths)}–{max(paths)}", "last": max(paths),
              "total walk": str(sum(minutes[n]["walkthrough_minutes"] for n in paths)),
              "total self": str(sum(minutes[n]["self_paced_minutes"] for n in paths)),
              "calibration": "\n" + "\n".join(
                  f"| {' + '.join(numbers)} | {'self-paced' if kind == 'self' else 'in class'} | {WHO[who]}, notebooks "
                  f"of {commit} | {HOW_WE_KNOW[who]} | {low if low == high else f'{low}-{high}'} | {estimate} |"
                  for numbers, kind, low, high, who, commit, estimate in calibration(root)) + "\n"}
    for number, m in minutes.items():
        if number in PARTS:
            continue
        values[number] = (f"**Core path:** {m['self_paced_minutes']} min self-paced, {m['walkthrough_minutes']} min "
                          "walk-through.")
        values[f"{number} walk"], values[f"{number} self"] = str(m["walkthrough_minutes"]), str(m["self_paced_minutes"])
    for label, (number, _, _, _) in PARTS.items():  # for the plans only: not notebooks of their own
        names[label] = names.get(number, "")
    for name in PLANS:
        values[f"plan {name}"] = ("\n" + render_plan(name, minutes, names) + "\n") if active(name, paths) else ""
    return values


def render_guide(text: str, root=ROOT) -> str:
    """``text`` with every core-path span rewritten from the notebooks (a span of an unknown name raises)."""
    values = guide_values(text, root)

    def fill(match):
        name = match.group("name").strip()
        if name not in values:
            raise KeyError(f"the teaching guide has a core-path span {name!r}; known: {', '.join(sorted(values))}")
        return f"<!-- core-path {name} -->{values[name]}<!-- /core-path -->"

    return SPAN.sub(fill, text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--write-guide", action="store_true", help="rewrite the minute figures of the guide")
    parser.add_argument("--check-guide", action="store_true", help="exit 1 if the guide's figures are stale")
    parser.add_argument("--plans", action="store_true", help="print how much of its slot each plan fills")
    args = parser.parse_args(argv)
    if args.plans:
        print(fill_table(series_minutes(GUIDE.read_text(encoding="utf-8"))))
        print(f"budget: every plan fills {FILL[0]:.0%}-{FILL[1]:.0%} of its slot")
    for path in args.notebooks:
        result = core_path(path)
        print(f"{path.name}: {result['self_paced_minutes']} min self-paced, {result['walkthrough_minutes']} min "
              f"walked through without the exercises ({result})")
    if args.write_guide or args.check_guide:
        text = GUIDE.read_text(encoding="utf-8")
        fresh = render_guide(text)
        if args.write_guide and fresh != text:
            GUIDE.write_text(fresh, encoding="utf-8")
            print(f"rewrote the minute figures of {GUIDE.relative_to(ROOT)}")
        elif args.check_guide and fresh != text:
            stale = [m.group("name") for m, n in zip(SPAN.finditer(text), SPAN.finditer(fresh))
                     if m.group(0) != n.group(0)]
            print(f"{GUIDE.relative_to(ROOT)}: stale minute figures in {', '.join(stale)}; "
                  "run python tools/core_path.py --write-guide")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
