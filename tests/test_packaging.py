"""The project's own setup files agree with each other."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pins(path):
    lines = (ROOT / path).read_text().splitlines()
    return sorted(line.strip() for line in lines if line.strip() and not line.startswith(("#", "-r")))


def test_binder_installs_exactly_the_runtime_pins():
    assert pins("binder/requirements.txt") == pins("requirements.txt")


def test_every_requirement_is_pinned():
    for path in ("requirements.txt", "requirements-test.txt", "binder/requirements.txt"):
        for line in pins(path):
            assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.]+", line), f"{path}: {line!r} is not pinned with =="


def test_torch_is_never_a_runtime_or_test_dependency():
    for path in ("requirements.txt", "requirements-test.txt", "binder/requirements.txt", "pyproject.toml"):
        assert "torch" not in (ROOT / path).read_text(), path


def test_binder_files():
    assert (ROOT / "binder/runtime.txt").read_text().strip() == "python-3.11"
    post_build = (ROOT / "binder/postBuild").read_text().splitlines()
    assert post_build[0].startswith("#!") and "set -e" in post_build[1:4]
    assert "-e ." not in (ROOT / "binder/requirements.txt").read_text()


def test_readme_has_the_two_commands_and_binder_badge():
    readme = (ROOT / "README.md").read_text()
    assert "python3 run.py lab" in readme and "python3 run.py test" in readme
    assert "mybinder.org/v2/gh/" in readme and "urlpath=lab%2Ftree%2Fnotebooks%2F00_start_here.ipynb" in readme
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"notebooks/{notebook.name}" in readme, f"README does not list {notebook.name}"


def test_binder_badge_opens_the_repository_named_in_pyproject():
    # A regex, not tomllib: the tests also run on Python 3.10.
    pyproject = (ROOT / "pyproject.toml").read_text()
    owner_name = re.search(r'^Repository = "https://github\.com/([\w.-]+/[\w.-]+)"$', pyproject, re.M).group(1)
    badges = re.findall(r"mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/", (ROOT / "README.md").read_text())
    assert badges and set(badges) == {owner_name}, f"README Binder badge {badges} != pyproject Repository {owner_name}"


def test_teaching_guide_covers_every_notebook_and_solution():
    from attn_helpers.checks._grader import SOLUTIONS

    guide = (ROOT / "docs/teaching-guide.md").read_text()
    for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"### {notebook.name[:2]} ·" in guide, f"the teaching guide has no section for {notebook.name}"
    for name in SOLUTIONS:
        assert f'solution("{name}")' in guide, f"the teaching guide does not say where solution {name!r} is"
