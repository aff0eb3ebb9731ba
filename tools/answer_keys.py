#!/usr/bin/env python3
"""The questions the answer keys in docs/answers/ must answer, found in the guide and the notebooks.

    python tools/answer_keys.py            # list each notebook's questions that docs/answers/NN.md lacks

- every discussion question of the teaching guide: the sentences ending in "?" of the bullet
  "**Discussion...:**" of section "### NN · ..." (a key quotes each question word for word);
- every predict-then-run question of a notebook: the ``my_...`` variable its prediction cell asks for
  (found as tools/core_path.py finds predictions; a key names it in backticks).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import core_path  # noqa: E402 - finds the predictions, a sibling script

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "teaching-guide.md"
ANSWERS = ROOT / "docs" / "answers"


def discussion_questions(guide_text: str, number: str) -> list[str]:
    """The questions of the guide's discussion bullet of section ``number``, each from its sentence's start."""
    section = re.search(rf"^### {number} · .*?(?=^##)", guide_text, flags=re.MULTILINE | re.DOTALL)
    if not section:
        return []
    bullet = re.search(r"^- \*\*Discussion[^*]*:\*\*(.*)$", section.group(0), flags=re.MULTILINE)
    if not bullet:
        return []
    questions = []
    for piece in re.findall(r"(?:[^?]|\?(?=[\"'”]))*\?(?=\s|$)", bullet.group(1)):  # "who acts?" is inside one
        sentence = re.split(r"(?<=[.!)])\s+(?=[A-Z*\"])", piece.strip())[-1].strip()
        questions.append(sentence.lstrip("() ").strip())
    return questions


def prediction_variables(path: Path) -> list[str]:
    """The ``my_...`` variables of a notebook's predict-then-run cells."""
    tool = core_path
    names = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and tool.is_prediction(source):
            names += [m.group(1) for m in tool.PREDICTION.finditer(source)]
    return names


def questions(root: Path = ROOT) -> dict:
    """``{NN: {"discussion": [...], "predictions": [...]}}`` for every notebook."""
    guide = (root / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    return {path.name[:2]: {"discussion": discussion_questions(guide, path.name[:2]),
                            "predictions": prediction_variables(path)}
            for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))}


def unanswered(root: Path = ROOT) -> dict:
    """Each notebook's questions that its answer key does not quote (discussion) or name (predictions)."""
    missing = {}
    for number, asked in questions(root).items():
        key = root / "docs" / "answers" / f"{number}.md"
        text = " ".join(key.read_text(encoding="utf-8").split()) if key.exists() else ""
        lacking = [q for q in asked["discussion"] if " ".join(q.split()) not in text]
        lacking += [f"`{name}`" for name in asked["predictions"] if f"`{name}`" not in text]
        if lacking:
            missing[number] = lacking
    return missing


def main() -> int:
    missing = unanswered()
    for number, lacking in missing.items():
        print(f"docs/answers/{number}.md lacks:")
        for item in lacking:
            print(f"  - {item}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
