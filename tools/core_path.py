#!/usr/bin/env python3
"""Estimate the minutes a learner needs for the core path of a notebook (every cell not tagged ``optional``).

    python tools/core_path.py notebooks/03_softmax.ipynb [...]
    python tools/core_path.py --write-guide    # rewrite every minute figure of docs/teaching-guide.md
    python tools/core_path.py --check-guide    # exit 1 if a figure of the guide differs from this tool's

An estimate, not a stopwatch: it adds up what a learner does on the core path, at rates
stated here so that anyone can disagree with them and re-run it.

- reading prose and equations: 130 words a minute (careful technical reading);
- each code cell: 30 s to run it and read its output;
- each figure: 1 min more to look at it; each live widget: 2 min to move its controls;
- each predict-then-run question: 2 min to think and write the prediction;
- each fill-in exercise: 5 min (a first attempt, one hint, a second attempt).

A teacher walking a class through a notebook (no exercises done in class) needs less;
the teaching guide gives both numbers.

Every minute figure of the teaching guide comes from here: it sits between the marks
``<!-- core-path NAME -->`` and ``<!-- /core-path -->``, and ``--write-guide`` rewrites it
(``NN``: a notebook's core-path line; ``NN walk``/``NN self``: its two numbers; ``count``,
``range``, ``total walk``: the whole series; ``plan NAME``: a lesson plan of ``PLANS`` below).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "teaching-guide.md"

RATES = {"words_per_minute": 130, "code": 0.5, "figure": 1.0, "widget": 2.0, "prediction": 2.0, "exercise": 5.0}


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


def core_path(path, until=None) -> dict:
    """Counts of what the core path of the notebook at ``path`` asks of a learner, and the minutes they add up to
    (only the cells before the first heading that starts with ``until``, if given)."""
    counts = {"words": 0, "code": 0, "figure": 0, "widget": 0, "prediction": 0, "exercise": 0}
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        source = "".join(cell["source"])
        if until and cell["cell_type"] == "markdown" and source.startswith(until):
            break
        if "optional" in tags:
            continue
        if cell["cell_type"] == "markdown":
            counts["words"] += len(re.findall(r"[A-Za-z]+", source))
        elif "nbval-ignore-output" in tags and ".show()" in source:  # a live widget (its view is not compared)
            counts["widget"] += 1
        else:
            counts["code"] += 1
            counts["figure"] += any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
            predicts = is_prediction(source)
            counts["prediction"] += predicts
            counts["exercise"] += not predicts and ("raise NotImplementedError" in source or bool(
                re.search(r"^\w+ = \.\.\.", source, re.MULTILINE) and re.search(r"\bcheck_\w+\(", source)))
    exercise_minutes = counts["exercise"] * RATES["exercise"]
    walkthrough = (counts["words"] / RATES["words_per_minute"] + counts["code"] * RATES["code"]
                   + counts["figure"] * RATES["figure"] + counts["widget"] * RATES["widget"]
                   + counts["prediction"] * RATES["prediction"])
    return {**counts, "walkthrough_minutes": round(walkthrough), "self_paced_minutes": round(walkthrough +
                                                                                             exercise_minutes)}


# ---------------------------------------------------------------------------------------------
# The teaching guide's lesson plans: what happens in each row is written here, the minutes come from the
# notebooks. A row is (label, minutes, what to do): a notebook row has its two-digit number as label and
# None as minutes (its walk-through minutes); "rest" gives a row the minutes left at the end (dropped when
# none are left). A notebook in "flex" moves to the homework when the plan would overrun (the last first).

#: Parts of a notebook that a plan walks through on its own: label -> (notebook, the heading it stops before).
PARTS = {"11 §1-6": ("11", "## 7."), "12 §1-6": ("12", "## 7 ·")}

PLANS = {
    "day1-90": {
        "length": 90, "when": "session",
        "before": [("00", "setup check, why attention, the symbol table"),
                   ("01", "real vectors; one vector per word is not enough")],
        "rows": [
            ("01 recap", 5, "The *apple* question from 01's discussion: one vector per word cannot tell fruit from "
                            "company; attention lets the sentence decide."),
            ("02", None, "The loop of dot products for \"journey\", then `X @ X.T`; the heatmap; the prediction: the "
                         "best key of \"with\"."),
            ("03", None, "Why dividing by the sum fails; the overflow demo; the temperature slider; **which axis**; "
                         "the prediction as $\\tau \\to 0$."),
            ("04", None, "The weighted sum as arrows; the whole weight-free recipe; what it cannot do; the "
                         "prediction: doubling $X$."),
            ("wrap-up", "rest", "Questions; show 05's creature grid (its static figure) as the answer to \"what it "
                                "cannot do\"."),
        ],
        "after": ["05", "06", "07", "08"], "after_note": ", each with its own exercises and checkers",
    },
    "day1-180": {
        "length": 180, "when": "workshop",
        "before": [("00", "including the setup check, so that nobody installs during the workshop"), ("01", "")],
        "rows": [
            ("02", None, "Loop, matrix form, geometry (angles), heatmap; predict the best key of \"with\"."),
            ("03", None, "Overflow and the max trick; temperature and entropy; the transpose picture; spot the slip "
                         "together."),
            ("04", None, "Convex combination; the weight-free recipe; its limits."),
            ("break", 10, ""),
            ("05", None, "The hand-worked example in pairs (one computes, one checks with code); spot the slip; the "
                         "creature grid."),
            ("06", None, "The variance argument; predict the spread at $d_k = 256$; the slider; √d_k vs √d_model."),
            ("07", None, "Mask before the softmax; the mirrored triangle of 3Blue1Brown; predict which rows change; "
                         "padding; the NaN of a fully masked row."),
            ("wrap-up", "rest", "Questions; the exercises each learner still has open."),
        ],
        "flex": ["07", "06"],
        "after": ["08"], "after_note": " and the exercises of 02 to 07",
    },
    "day2-180": {
        "length": 180, "when": "workshop",
        "before": [],
        "rows": [
            ("09", None, "\"Dog bites man\": the same set of context vectors in every order; a learned table and the "
                         "sinusoidal encoding; predict how many words change; RoPE rotates queries and keys."),
            ("10", None, "Residuals and layer norm per token (the `axis=0` slip); GELU and the feed-forward network; "
                         "pre- vs post-norm stacked; predict which rows a decoder's change touches; GPT-2's count."),
            ("break", 10, ""),
            ("11", None, "The softmax's Jacobian and the backward pass of attention; gradient checks; train *copy "
                         "previous* live; predict the reverse task's pattern; the induction head; the ablations."),
            ("12", None, "Load all-MiniLM-L6-v2 after its hash check; WordPiece; the head view; predict the sink; "
                         "weight is not influence; *apple* in two sentences."),
            ("13", None, "Time and memory against $T$; online softmax; tiles and the tiles a causal mask skips; the "
                         "KV cache and grouped-query attention."),
            ("wrap-up", "rest", "Questions; which of the series' claims would you now test on a model of your own?"),
        ],
        "flex": ["13", "12", "11"],
        "after": [], "after_note": " and the exercises of 09 to 13",
    },
    "day2-90": {
        "length": 90, "when": "session",
        "before": [("10", "the block that 11 trains and 12 runs")],
        "rows": [
            ("10 recap", 5, "One pre-norm block on the board: attention, feed-forward, two residuals, two layer "
                            "norms."),
            ("11 §1-6", None, "The chain rule on three numbers; the softmax's backward pass from its Jacobian; the "
                              "gradient-check table; train *copy previous* live; predict the reverse task's "
                              "pattern; the induction head."),
            ("12 §1-6", None, "The hash check and WordPiece; the head view; measured head habits; predict the sink; "
                              "weight is not influence."),
            ("wrap-up", "rest", "Questions; what would convince you that a head does what its weights suggest?"),
        ],
        "flex": [],
        "after": ["13"], "after_note": ", the rest of 11 (the ablations) and of 12 (removing a "
                                       "head, *apple* in two sentences, exercise 12.3), and the exercises of 11 and 12",
    },
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

    def length(row):
        label, mins, _ = row
        return minutes[label]["walkthrough_minutes"] if mins is None else (0 if mins == "rest" else mins)

    while sum(map(length, rows)) > plan["length"]:
        if not flex:
            raise ValueError(f"lesson plan {name!r} needs {sum(map(length, rows))} min, more than its "
                             f"{plan['length']}: put a notebook in its 'flex' list or shorten it")
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


def render_plan(name: str, minutes: dict, names: dict) -> str:
    """The markdown of plan ``name``: what to do before, the minute-by-minute table, what to do after."""
    plan, when = PLANS[name], PLANS[name]["when"]
    rows, moved = plan_rows(name, minutes)
    lines = []
    if plan["before"]:
        total = sum(minutes[n]["self_paced_minutes"] for n, _ in plan["before"])
        parts = [f"{n} {names[n]} ({minutes[n]['self_paced_minutes']} min{': ' + note if note else ''})"
                 for n, note in plan["before"]]
        lines += [f"**Before the {when}** (self-paced, {total} min): {_listing(parts)}.", ""]
    lines += ["| time | notebook | what to do |", "| --- | --- | --- |"]
    rest = [label for label, mins, _ in plan["rows"] if mins == "rest"]
    for start, end, label, what in rows:
        shown = f"{label} {names[label]} ({end - start} min)" if label in minutes else (
            f"{label} ({end - start} min)" if label in rest else label)
        lines.append(f"| {_clock(start)}-{_clock(end)} | {shown} |" + (f" {what} |" if what else " |"))
    after = moved + list(plan["after"])
    parts = [f"{n} {names[n]} ({minutes[n]['self_paced_minutes']} min)" for n in after]
    if parts or plan.get("after_note"):
        text = (_listing(parts) if parts else "") + plan.get("after_note", "")
        if not parts:
            text = text.strip().removeprefix("and ").removeprefix(", ")
        lines += ["", f"**After the {when}** (self-paced): {text}."]
    return "\n".join(lines)


SPAN = re.compile(r"<!-- core-path (?P<name>[^>]*?) -->(?P<body>.*?)<!-- /core-path -->", re.DOTALL)


def guide_values(text: str, root=ROOT) -> dict:
    """What each span name of the guide stands for, computed from the notebooks."""
    paths = notebooks(root)
    minutes = {number: core_path(path) for number, path in paths.items()}
    names = titles(text)
    values = {"count": str(len(paths)), "range": f"{min(paths)}–{max(paths)}",
              "total walk": str(sum(m["walkthrough_minutes"] for m in minutes.values()))}
    for number, m in minutes.items():
        values[number] = (f"**Core path:** {m['self_paced_minutes']} min self-paced, {m['walkthrough_minutes']} min "
                          "walk-through.")
        values[f"{number} walk"], values[f"{number} self"] = str(m["walkthrough_minutes"]), str(m["self_paced_minutes"])
    for label, (number, until) in PARTS.items():  # for the plans only: not notebooks of their own
        minutes[label], names[label] = core_path(paths[number], until), names.get(number, "")
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
