"""docs/answers/NN.md answers every discussion question of the teaching guide and every predict-then-run
question of the notebooks (tools/answer_keys.py finds them), and quotes no number the notebooks or the guide
do not print. A question added later to a notebook or to the guide fails here until its answer is written."""

from __future__ import annotations

import json
import re

import pytest
from tool_loader import ROOT, load_tool

keys = load_tool("answer_keys")
QUESTIONS = keys.questions(ROOT)
GUIDE = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")


def test_every_question_of_the_guide_and_the_notebooks_has_an_answer():
    assert keys.unanswered(ROOT) == {}, "write the answers, or run python tools/answer_keys.py to list them"


@pytest.mark.parametrize("number", sorted(QUESTIONS))
def test_every_notebook_asks_a_prediction_and_its_key_answers_it_with_wrong_answers(number):
    assert QUESTIONS[number]["predictions"], f"notebook {number} has no predict-then-run question"
    key = (ROOT / "docs" / "answers" / f"{number}.md").read_text(encoding="utf-8")
    for name in QUESTIONS[number]["predictions"]:
        section = key[key.index(f"`{name}`"):]
        section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
        assert "**Answer.**" in section and "| wrong answer | what it reveals |" in section, name


def test_the_questions_are_whole_sentences():
    found = [q for asked in QUESTIONS.values() for q in asked["discussion"]]
    assert len(found) >= 2 * len(QUESTIONS)
    assert all(q.endswith("?") and not q.startswith(("(", ")", '" ')) for q in found), found


@pytest.mark.parametrize("number", sorted(QUESTIONS))
def test_every_number_quoted_is_printed_by_the_notebook_or_the_guide(number):
    (notebook,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    printed = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        printed.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            printed.append("".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", "")))
    text = "\n".join(printed) + GUIDE
    key = (ROOT / "docs" / "answers" / f"{number}.md").read_text(encoding="utf-8")
    quoted = set(re.findall(r"(?<![\w.])\d+\.\d+", key))
    assert not [n for n in quoted if n not in text]
