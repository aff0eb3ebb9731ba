#!/usr/bin/env python3
"""Estimate the minutes a learner needs for the core path of a notebook (every cell not tagged ``optional``).

    python tools/core_path.py notebooks/03_softmax.ipynb [...]

An estimate, not a stopwatch: it adds up what a learner does on the core path, at rates
stated here so that anyone can disagree with them and re-run it.

- reading prose and equations: 130 words a minute (careful technical reading);
- each code cell: 30 s to run it and read its output;
- each figure: 1 min more to look at it; each live widget: 2 min to move its controls;
- each predict-then-run question: 2 min to think and write the prediction;
- each fill-in exercise: 5 min (a first attempt, one hint, a second attempt).

A teacher walking a class through a notebook (no exercises done in class) needs less;
the teaching guide gives both numbers.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

RATES = {"words_per_minute": 130, "code": 0.5, "figure": 1.0, "widget": 2.0, "prediction": 2.0, "exercise": 5.0}


def core_path(path) -> dict:
    """Counts of what the core path of the notebook at ``path`` asks of a learner, and the minutes they add up to."""
    counts = {"words": 0, "code": 0, "figure": 0, "widget": 0, "prediction": 0, "exercise": 0}
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        source = "".join(cell["source"])
        if "optional" in tags:
            continue
        if cell["cell_type"] == "markdown":
            counts["words"] += len(re.findall(r"[A-Za-z]+", source))
        elif "nbval-ignore-output" in tags and ".show()" in source:  # a live widget (its view is not compared)
            counts["widget"] += 1
        else:
            counts["code"] += 1
            counts["figure"] += any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
            asks = bool(re.search(r"^my_\w+ = \.\.\.", source, re.MULTILINE))
            counts["prediction"] += asks and "check_" not in source
            counts["exercise"] += "raise NotImplementedError" in source or ("my_" in source and "check_" in source
                                                                            and "= ..." in source)
    exercise_minutes = counts["exercise"] * RATES["exercise"]
    walkthrough = (counts["words"] / RATES["words_per_minute"] + counts["code"] * RATES["code"]
                   + counts["figure"] * RATES["figure"] + counts["widget"] * RATES["widget"]
                   + counts["prediction"] * RATES["prediction"])
    return {**counts, "walkthrough_minutes": round(walkthrough), "self_paced_minutes": round(walkthrough +
                                                                                             exercise_minutes)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    for path in parser.parse_args(argv).notebooks:
        result = core_path(path)
        print(f"{path.name}: {result['self_paced_minutes']} min self-paced, {result['walkthrough_minutes']} min "
              f"walked through without the exercises ({result})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
