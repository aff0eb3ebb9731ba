"""The classroom kit as a package (issue 48): part of the series' distribution, run as ``python -m classroom_kit``.

- The distribution's package list (pyproject.toml, found as setuptools finds it) holds ``classroom_kit`` with every
  module the grading copy (``.grader/``) is made of, and its container file; not the tests, not tools/.
- From an environment with the kit installed from this checkout (``pip install -e ".[teacher]"``, what
  ``python3 run.py classroom`` and CI's fresh environment do), ``python -m classroom_kit --out DIR 03`` run
  outside the checkout writes the course folder and its grading copy, and so does ``run.py classroom`` (which runs
  the kit so).
  An environment whose kit comes from another checkout (or none) skips with the reason; under CI=true it fails.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from tool_loader import ROOT, load_tool

KIT = ROOT / "classroom_kit"


def test_the_distribution_holds_the_kit_with_every_module_of_the_grading_copy(tmp_path):
    from setuptools import find_packages

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = re.search(r"^\[tool\.setuptools\.packages\.find\]\n(.*?)^\[", text, re.M | re.S).group(1)
    include = re.findall(r'"([^"]+)"', re.search(r"^include = \[(.*?)\]", block, re.M).group(1))
    packages = find_packages(str(ROOT), include=include)
    assert "classroom_kit" in packages and "attn_helpers" in packages, packages
    assert not [p for p in packages if p.split(".")[0] in ("tests", "tools", "benchmarks", "notebooks")], packages
    assert re.search(r'^classroom_kit = \["grading\.Dockerfile"\]', text, re.M), "the container file ships too"
    classroom = load_tool("classroom")
    copied = classroom.install_grader(tmp_path)
    kit_modules = {p.name for p in copied.glob("*.py")} - {"build_site.py", "slides.py", "core_path.py"}
    assert kit_modules and all((KIT / name).is_file() for name in kit_modules), kit_modules
    assert (KIT / "__main__.py").is_file() and (KIT / "__init__.py").is_file()


def clean_env() -> dict:
    """This environment as a teacher's shell has it: no PYTHONPATH pointing at the checkout."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def installed_kit(cwd) -> str:
    """Where ``classroom_kit`` is imported from by this Python, run outside the checkout ('' when not installed)."""
    done = subprocess.run([sys.executable, "-c", "import importlib.util as u; s = u.find_spec('classroom_kit'); "
                           "print(s.origin if s else '')"], cwd=cwd, env=clean_env(), capture_output=True, text=True)
    return done.stdout.strip()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("command", [["-m", "classroom_kit"], [str(ROOT / "run.py"), "classroom"]])
def test_the_installed_kit_writes_the_course_folder_from_outside_the_checkout(tmp_path, command):
    origin = installed_kit(tmp_path)
    if origin != str(KIT / "__init__.py"):
        reason = (f"the kit this Python imports is {origin}, not this checkout's" if origin else
                  "the kit is not installed in this Python (pip install -e \".[teacher]\")")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true: {reason}")
        pytest.skip(reason)
    env = dict(clean_env(), ATTN_PYTHON=sys.executable)  # run.py: this environment, nothing installed
    done = subprocess.run([sys.executable, *command, "--out", "course", "03"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "course"
    assert "03_softmax: 2 graded tests" in done.stdout, done.stdout
    assert (out / "source" / "03_softmax" / "03_softmax.ipynb").is_file()
    assert (out / "nbgrader_config.py").is_file()
    assert (out / ".grader" / "grade.py").read_bytes() == (KIT / "grade.py").read_bytes()
    assert (out / ".grader" / "attn_helpers" / "checks").is_dir()
