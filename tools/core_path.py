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
- each hard derivation (``ACTIVITIES``: the softmax's Jacobian, attention's backward pass, Adam,
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
(``timed_alone``). In class, a teacher of 30 walked a plan minute by minute (an estimate, not a class
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

#: What a class spends extra time on, found by the heading that opens it in the notebook's core path:
#: (kind, notebook, the start of the heading line).
ACTIVITIES = [
    ("derivation", "09", "## Relative positions: RoPE"),
    ("derivation", "11", "## 1. The softmax's backward pass"),
    ("derivation", "11", "## 2. Backwards through attention"),
    ("derivation", "11", "## 4. Train it: Adam, written out"),
    ("derivation", "14", "### Layer norm"),
    ("derivation", "14", "### The feed-forward network, attention, the residuals: one block"),
    ("pair work", "05", "## A complete example by hand"),
]

#: Who timed what (``WHO``): a learner working alone, or a teacher walking a plan minute by minute.
WHO = {"new to the maths": "a learner new to the maths, alone, cell by cell (timed)",
       "engineer": "an engineer with one ML course, alone, cell by cell (timed)",
       "first learner": "the first learner, alone (timed)",
       "room walk": "a teacher of 30 walking the plan minute by minute (an estimate)"}
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


def core_path(path, until=None, discussion=None, timed=True) -> dict:
    """Counts of what the core path of the notebook at ``path`` asks of a learner, and the minutes they add up to
    (only the cells before the first heading that starts with ``until``, if given; ``discussion``: the number
    of discussion questions asked in class, by default those of the notebook's section of the guide). With
    ``timed``, the self-paced minutes of a whole notebook rise to a learner's timed minutes where those are more
    (``timed_alone``); ``estimated_self_paced_minutes`` is the estimate alone."""
    number = Path(path).name[:2]
    if discussion is None:
        discussion = discussion_questions(GUIDE.read_text(encoding="utf-8")).get(number, 0)
    counts = {"words": 0, "code": 0, "figure": 0, "widget": 0, "prediction": 0, "exercise": 0, "derivation": 0,
              "pair work": 0, "discussion": discussion}
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        source = "".join(cell["source"])
        if until and cell["cell_type"] == "markdown" and source.startswith(until):
            break
        if "optional" in tags:
            continue
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
    both = sum(counts[kind] * RATES[kind] for kind in ("code", "figure", "widget"))
    self_paced = (counts["words"] / RATES["words_per_minute"] + both + counts["exercise"] * RATES["exercise"]
                  + counts["prediction"] * RATES["prediction"] + counts["derivation"] * RATES["derivation"])
    walkthrough = (counts["words"] / RATES["words_per_minute_in_class"] + both
                   + counts["prediction"] * RATES["prediction in class"]
                   + counts["derivation"] * RATES["derivation in class"]
                   + counts["discussion"] * RATES["discussion"] + counts["pair work"] * RATES["pair work"])
    estimate = round(self_paced)
    alone = timed_alone(number) if timed and until is None else 0
    return {**counts, "walkthrough_minutes": round(walkthrough), "self_paced_minutes": max(estimate, alone),
            "estimated_self_paced_minutes": estimate}


def timed_alone(number: str) -> int:
    """The longest a learner working alone was timed on notebook ``number`` (0 if nobody was)."""
    return max([low for numbers, kind, low, _, who, _ in MEASURED
                if numbers == (number,) and kind == "self" and who != "room walk"], default=0)


def series_minutes(guide_text: str, root=ROOT, timed=True) -> dict:
    """``core_path`` of every notebook of the series and of every part of ``PARTS``, with its discussion questions
    from ``guide_text``."""
    questions = discussion_questions(guide_text)
    paths = notebooks(root)
    minutes = {number: core_path(path, discussion=questions.get(number, 0), timed=timed)
               for number, path in paths.items()}
    for label, (number, until, _) in PARTS.items():
        if number in paths:
            minutes[label] = core_path(paths[number], until, questions.get(number, 0), timed=timed)
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
        return series_minutes(guide, Path(folder), timed=False)


def calibration(root=ROOT) -> list:
    """``(notebooks, kind, measured low, measured high, who, commit, estimated)`` for every row of ``MEASURED``, the
    estimate made on the notebooks of that row's commit (on today's notebooks when the clone lacks it)."""
    key = {"self": "estimated_self_paced_minutes", "walk": "walkthrough_minutes"}
    cache, rows = {}, []
    for numbers, kind, low, high, who, commit in MEASURED:
        if commit not in cache:
            cache[commit] = measured_minutes(commit, root)
        minutes = cache[commit] or series_minutes(GUIDE.read_text(encoding="utf-8"), root, timed=False)
        rows.append((numbers, kind, low, high, who, commit, sum(minutes[n][key[kind]] for n in numbers)))
    return rows


# ---------------------------------------------------------------------------------------------
# The teaching guide's lesson plans: what happens in each row is written here, the minutes come from the
# notebooks. A row is (label, minutes, what to do): a notebook row has its two-digit number (or a label of
# PARTS) as label and None as minutes (its walk-through minutes); "rest" gives a row the minutes left at the
# end. The rows other than "rest" fill at most (1 - SLACK) of the slot; a notebook in "flex" moves to the
# homework when they would fill more (the first of "flex" first).

SLACK = 0.10  # the share of every slot left free: questions, a slow start, a setup that fails

#: Parts of a notebook that a plan walks through on its own: label -> (notebook, the heading it stops before,
#: what the rest of the notebook holds).
PARTS = {"05 §1-5": ("05", "## Exercise 05.1", "exercises 05.1-05.3"),
         "10 §1-7": ("10", "## 8. Bridge to PyTorch", "the bridge to PyTorch, dropout and the exercises"),
         "12 §1-6": ("12", "## 7 ·", "removing a head, *apple* in two sentences, exercise 12.1")}

SETUP = ("setup", RATES["setup"], "Everyone opens the notebook and runs its first cell (on a laptop, Binder, Colab or "
                                   "the hub); fix what does not start now, not halfway through.")
BREAK = ("break", 10, "")


def session(*rows, before=(), after=(), flex=(), when="session"):
    """A 3-hour plan: setup, then ``rows``, then a wrap-up with the minutes left."""
    return {"length": 180, "when": when, "before": list(before), "after": list(after), "flex": list(flex),
            "rows": [SETUP, *rows, ("wrap-up", "rest", "Exercises in the room, in pairs, while you can help; "
                                                       "questions.")]}


#: The tracks a teacher chooses from (each session a week apart, say), then the two-day plan.
TRACKS = {
    "The attention core (00-08)": ["core 1", "core 2", "core 3"],
    "The transformer (09-11)": ["transformer 1", "transformer 2", "transformer 3"],
    "Language models (12-15)": ["models 1", "models 2", "models 3", "models 4", "models 5"],
    "Two days of 3 hours": ["day 1", "day 2"],
}
PLANS = {
    "core 1": session(
        ("02", None, "A loop of dot products, then `X @ X.T`; predict the largest score of \"journey\"."),
        ("03", None, "Why dividing by the sum fails; the overflow demo; the temperature slider; **which axis**; "
                     "predict where \"one\" puts its weight as $\\tau \\to 0$; spot the slip together."),
        BREAK,
        ("04", None, "The weighted sum as arrows; the whole weight-free recipe; predict what doubling $X$ does; "
                     "what it cannot do."),
        before=[("00", "including the setup check, so that nobody installs in the room"), ("01", "")], flex=["04"]),
    "core 2": session(
        ("05", None, "The hand-worked example in pairs (one computes, one checks with code); predict which rows "
                     "change; spot the slip; the creature grid."),
        BREAK,
        ("06", None, "Why $\\sqrt{d_k}$: the variance argument, the saturated softmax, the vanishing gradient."),
        flex=["06"]),
    "core 3": session(
        ("07", None, "No peeking: the mask before the softmax; padding and the fully masked row."),
        BREAK,
        ("08", None, "Heads as a loop, then split, attend, merge; predict the shape of `weights`; the designed head "
                     "and the random one; the parameter count."),
        after=[]),
    "transformer 1": session(
        ("09", None, "\"Dog bites man\": the same set of context vectors in every order; a learned table and the "
                     "sinusoidal encoding; predict how many words change; RoPE rotates queries and keys; the length "
                     "experiment."),
        BREAK),
    "transformer 2": session(
        ("10", None, "The residual stream, layer norm per token, the feed-forward network, pre- vs post-norm, "
                     "stacking; GPT-2's parameter count from its configuration."),
        BREAK),
    "transformer 3": session(
        ("11", None, "The softmax's Jacobian and the backward pass of attention; gradient checks; Adam written out; "
                     "train *copy previous* live; predict the reverse task's pattern; the induction head; the "
                     "ablations."),
        BREAK, after=[]),
    "models 1": session(
        ("12", None, "The hash check and WordPiece; the head view; measured head habits; predict the sink; weight is "
                     "not influence; removing a head."),
        BREAK),
    "models 2": session(
        ("13", None, "Time and memory like $T^2$, measured; the online softmax; tiled attention; the KV cache and "
                     "what grouped-query attention saves."),
        BREAK),
    "models 3": session(
        ("14", None, "Byte-pair encoding; the backward pass checked; training on *Pride and Prejudice*; sampling; "
                     "its heads; from GPT-2 to Llama."),
        BREAK),
    "models 4": session(
        ("15", None, "A real model from a GGUF file: one 4-bit block by hand; the tokenizer; the model from the "
                     "series' one block; chat; predict the sink, the induction layers and the cache; ablate the "
                     "induction heads."),
        BREAK),
    "models 5": session(
        ("16", None, "Windows and the sink that must stay (predict the window's loss); the sink logit; latent "
                     "attention and absorption (predict DeepSeek-V3's cache); linear attention and what a fixed "
                     "state cannot recall; top-k sparse attention."),
        BREAK),
    "day 1": session(
        ("02", None, "A loop of dot products, then `X @ X.T`; predict the largest score of \"journey\"."),
        ("03", None, "Why dividing by the sum fails; the overflow demo; the temperature slider; **which axis**; "
                     "spot the slip together."),
        BREAK,
        ("04", None, "The weighted sum as arrows; the whole weight-free recipe; what it cannot do."),
        before=[("00", "including the setup check, so that nobody installs in the room"), ("01", "")],
        after=["05", "06", "07", "09"], flex=["04"], when="day"),
    "day 2": session(
        ("08", None, "Heads as a loop, then split, attend, merge; predict the shape of `weights`; the parameter "
                     "count."),
        BREAK,
        ("10 §1-7", None, "The block: residual stream, layer norm, the feed-forward network, pre- vs post-norm, "
                          "stacking, GPT-2's parameter count."),
        after=["10 §1-7", "11", "12", "13", "14", "15", "16"], flex=["08"], when="day"),
}


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


def plan_rows(name: str, minutes: dict) -> tuple[list, list]:
    """The rows ``(start, end, label, what)`` of plan ``name`` (in minutes from the start) and the notebooks
    moved to the homework because they did not fit."""
    plan = PLANS[name]
    rows, moved = list(plan["rows"]), []
    flex = list(plan.get("flex", []))
    room = plan["length"] * (1 - SLACK)

    def length(row):
        label, mins, _ = row
        return minutes[label]["walkthrough_minutes"] if mins is None else (0 if mins == "rest" else mins)

    while sum(map(length, rows)) > room:
        if not flex:
            raise ValueError(f"lesson plan {name!r} needs {sum(map(length, rows))} min, more than its "
                             f"{plan['length']} less {SLACK:.0%}: put a notebook in its 'flex' list or shorten it")
        drop = flex.pop(0)
        rows = [row for row in rows if row[0] != drop]
        moved.append(drop)
    timed, start = [], 0
    for row in rows:
        mins = plan["length"] - sum(map(length, rows)) if row[1] == "rest" else length(row)
        if mins:
            timed.append((start, start + mins, row[0], row[2]))
        start += mins
    return timed, moved[::-1]


def homework(label: str, minutes: dict, names: dict) -> tuple[str, int]:
    """What a homework item says and its self-paced minutes: a notebook, or the rest of a part of PARTS."""
    if label in PARTS:
        number, _, rest = PARTS[label]
        mins = minutes[number]["self_paced_minutes"] - minutes[label]["self_paced_minutes"]
        return f"the rest of {number} {names[number]} ({mins} min: {rest})", mins
    return f"{label} {names[label]} ({minutes[label]['self_paced_minutes']} min)", minutes[label]["self_paced_minutes"]


def render_plan(name: str, minutes: dict, names: dict) -> str:
    """The markdown of plan ``name``: what to do before, the minute-by-minute table, the homework after."""
    plan, when = PLANS[name], PLANS[name]["when"]
    rows, moved = plan_rows(name, minutes)
    lines = []
    if plan["before"]:
        total = sum(minutes[n]["self_paced_minutes"] for n, _ in plan["before"])
        parts = [f"{n} {names[n]} ({minutes[n]['self_paced_minutes']} min{': ' + note if note else ''})"
                 for n, note in plan["before"]]
        lines += [f"**Before the {when}** (homework, self-paced, {total} min): {_listing(parts)}.", ""]
    lines += ["| time | notebook | what to do |", "| --- | --- | --- |"]
    rest = [label for label, mins, _ in plan["rows"] if mins == "rest"]
    for start, end, label, what in rows:
        shown = f"{label} {names[label]} ({end - start} min)" if label in minutes else (
            f"{label} ({end - start} min)" if label in rest else label)
        lines.append(f"| {_clock(start)}-{_clock(end)} | {shown} |" + (f" {what} |" if what else " |"))
    after = [homework(label, minutes, names) for label in moved + list(plan["after"])]
    if after:
        lines += ["", f"**After the {when}** (homework, self-paced, {sum(m for _, m in after)} min): "
                      f"{_listing([text for text, _ in after])}."]
    return "\n".join(lines)


SPAN = re.compile(r"<!-- core-path (?P<name>[^>]*?) -->(?P<body>.*?)<!-- /core-path -->", re.DOTALL)


def guide_values(text: str, root=ROOT) -> dict:
    """What each span name of the guide stands for, computed from the notebooks."""
    paths = notebooks(root)
    minutes = series_minutes(text, root)
    names = titles(text)
    values = {"count": str(len(paths)), "range": f"{min(paths)}–{max(paths)}",
              "total walk": str(sum(minutes[n]["walkthrough_minutes"] for n in paths)),
              "total self": str(sum(minutes[n]["self_paced_minutes"] for n in paths)),
              "calibration": "\n" + "\n".join(
                  f"| {' + '.join(numbers)} | {'self-paced' if kind == 'self' else 'in class'} | {WHO[who]}, notebooks "
                  f"of {commit} | {low if low == high else f'{low}-{high}'} | {estimate} |"
                  for numbers, kind, low, high, who, commit, estimate in calibration(root)) + "\n"}
    for number, m in minutes.items():
        if number in PARTS:
            continue
        values[number] = (f"**Core path:** {m['self_paced_minutes']} min self-paced, {m['walkthrough_minutes']} min "
                          "walk-through.")
        values[f"{number} walk"], values[f"{number} self"] = str(m["walkthrough_minutes"]), str(m["self_paced_minutes"])
    for label, (number, _, _) in PARTS.items():  # for the plans only: not notebooks of their own
        names[label] = names.get(number, "")
    for name in PLANS:
        values[f"plan {name}"] = "\n" + render_plan(name, minutes, names) + "\n"
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
    args = parser.parse_args(argv)
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
