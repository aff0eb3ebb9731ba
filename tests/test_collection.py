"""The collection boundary of the classroom kit (tools/submissions.py, tools/classroom.py): only the assignment's
notebook is taken from a submission, never followed through a link, and a notebook nbgrader cannot grade costs only
its learner.

- ``accepted_files`` and ``clean_copy`` on trees of links, FIFOs, devices, hard links, odd names and huge files,
  crafted and generated (Hypothesis): nothing but the notebook is ever copied, no link is followed;
- ``canonical_notebook`` on each malformed kind (bad JSON, a source that is a number, a copied exercise cell,
  a renamed grade id, an extra grade cell worth 100, stripped metadata);
- the real nbgrader cycle on a class of six with each malformed kind: every row of grades.csv agrees with the
  command's summary, nobody is a silent 0;
- as root, bob (a real Unix account) attacks through the course's exchange with links and a FIFO, and the
  default home folders leak a classmate's notebook until the guide's advice is followed.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent

submissions = load_tool("submissions")
classroom = load_tool("classroom")
ASSIGNMENT = "02_dot_product_scores"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A course folder of notebook 02 with its released notebook: ``(out, source, release)`` (dicts)."""
    out = tmp_path_factory.mktemp("course")
    classroom.build(out, {"02"})
    done = classroom.nbgrader(out, "generate_assignment", ASSIGNMENT, "--force")
    assert done.returncode == 0, done.stderr[-2000:]
    read = lambda folder: json.loads((out / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text("utf-8"))  # noqa: E731
    return out, read("source"), read("release")


def grade_cells(nb: dict) -> list[tuple]:
    return [(c["metadata"]["nbgrader"]["grade_id"], c["metadata"]["nbgrader"].get("points"))
            for c in nb["cells"] if "nbgrader" in c.get("metadata", {})]


def cell_of(nb: dict, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def malformed(source: dict) -> dict:
    """``{student: (notebook bytes, what the reason must say)}``: each kind nbgrader cannot grade as it is."""
    kinds = {}
    nb = copy.deepcopy(source)
    nb["cells"][3]["source"] = 42
    kinds["int_source"] = (nb, "cell 4 dropped (its source is int")
    nb = copy.deepcopy(source)
    at = cell_of(nb, "dot_score")
    stale = copy.deepcopy(release_cell(nb, at))
    stale.update(id="stalecopy", execution_count=2)
    nb["cells"][at]["execution_count"] = 7
    nb["cells"].insert(at + 2, stale)  # the released stub pasted below: the solution ran last (7 > 2)
    kinds["duplicated"] = (nb, "2 copies")
    nb = copy.deepcopy(source)
    nb["cells"][cell_of(nb, "dot_score")]["metadata"]["nbgrader"]["grade_id"] = "my_dot_score"
    kinds["renamed"] = (nb, "grade id 'my_dot_score' is not the assignment's")
    nb = copy.deepcopy(source)
    bonus = copy.deepcopy(nb["cells"][cell_of(nb, "test_dot_score")])
    bonus["metadata"]["nbgrader"].update(grade_id="bonus", points=100)
    bonus.update(id="bonus", source="assert True")
    nb["cells"].append(bonus)
    kinds["extra_100"] = (nb, "grade id 'bonus' is not the assignment's")
    nb = copy.deepcopy(source)
    for cell in nb["cells"]:
        cell["metadata"] = {}
    kinds["stripped"] = (nb, "had lost its grading metadata, found by its content")
    encoded = {student: (json.dumps(nb).encode(), said) for student, (nb, said) in kinds.items()}
    encoded["bad_json"] = (json.dumps(source).encode()[:-200], "its JSON does not parse")
    return encoded


def release_cell(nb, at):
    """The released stub of the exercise cell at ``at`` (the source's solution region taken out)."""
    cell = copy.deepcopy(nb["cells"][at])
    cell["source"] = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION\n?", "", "".join(cell["source"]), flags=re.S)
    return cell


def test_each_malformed_kind_is_repaired_into_the_released_grade_cells_or_refused_with_its_reason(released):
    _, source, release = released
    expected = grade_cells(release)
    assert [points for _, points in expected] == [None, 1, None, 1]
    for student, (data, said) in malformed(source).items():
        try:
            text, notes = submissions.canonical_notebook(data, release)
        except submissions.Refused as err:
            assert said in str(err), (student, err)
            continue
        nb = json.loads(text)
        assert grade_cells(nb) == expected, student
        assert any(said in note for note in notes), (student, notes)
        ids = [c["id"] for c in nb["cells"]]
        assert len(ids) == len(set(ids)), student
    text, notes = submissions.canonical_notebook(json.dumps(source).encode(), release)
    assert notes == [] and grade_cells(json.loads(text)) == expected
