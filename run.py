#!/usr/bin/env python3
"""Set up everything, then open the series or run the tests. Needs only Python >= 3.10.

    python3 run.py lab     # create .venv, install, open notebook 00 in JupyterLab
    python3 run.py test    # create .venv, install, run the whole test suite
    python3 run.py site    # build a static site (site/index.html) from the executed notebooks

The virtual environment lives in ``.venv`` beside this file and is reinstalled only
when ``requirements*.txt`` or ``pyproject.toml`` change. Extra arguments after
``test`` go to pytest (``python3 run.py test -k softmax``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")


def say(message: str) -> None:
    print(f"[run.py] {message}", flush=True)


def ensure_env(requirements: str) -> None:
    """Create ``.venv`` if needed and install ``requirements`` plus the package (editable)."""
    if sys.version_info < (3, 10):  # noqa: UP036 - run.py must explain itself on an old Python
        sys.exit(f"[run.py] Python >= 3.10 is needed; this is {sys.version.split()[0]}")
    files = [ROOT / requirements, ROOT / "requirements.txt", ROOT / "pyproject.toml"]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]
    stamp = VENV / f".installed-{requirements}-{digest}"
    if stamp.exists() and PYTHON.exists():
        return
    if not PYTHON.exists():
        say(f"creating a virtual environment in {VENV.name}/")
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    say(f"installing {requirements} and attn_helpers (a few minutes the first time)")
    pip = [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "-qq"]
    subprocess.run([*pip, "-r", str(ROOT / requirements), "-e", str(ROOT)], check=True)
    for old in VENV.glob(f".installed-{requirements}-*"):
        old.unlink()
    stamp.touch()


def lab(args: list[str]) -> int:
    ensure_env("requirements.txt")
    say("opening JupyterLab; stop it with Ctrl+C")
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # in a container, for example
        args = ["--allow-root", *args]
    return subprocess.call([str(PYTHON), "-m", "jupyter", "lab", "notebooks/00_start_here.ipynb", *args], cwd=ROOT)


def browser_available() -> str | None:
    if os.environ.get("ATTN_CHROMIUM"):
        return os.environ["ATTN_CHROMIUM"] if Path(os.environ["ATTN_CHROMIUM"]).exists() else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test(args: list[str]) -> int:
    ensure_env("requirements-test.txt")
    env = dict(os.environ)
    chromium = browser_available()
    if chromium:
        env["ATTN_CHROMIUM"] = chromium  # the browser tests use the same browser
        say(f"Chromium found ({chromium}): the browser tests (tests/browser) run too")
    else:
        say("Chromium NOT found: the browser tests will be SKIPPED (install it: apt-get install chromium)")
    return subprocess.call([str(PYTHON), "-m", "pytest", *args], cwd=ROOT, env=env)


def site(args: list[str]) -> int:
    ensure_env("requirements-test.txt")  # nbconvert is a maintainer dependency
    say("building the static site from the notebooks' stored outputs (no kernel, no internet needed)")
    # build_site.py prints where it wrote (site/ by default; --out DIR relative to where you are)
    return subprocess.call([str(PYTHON), str(ROOT / "tools" / "build_site.py"), *args])


def main(argv: list[str]) -> int:
    commands = {"lab": lab, "test": test, "site": site}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
