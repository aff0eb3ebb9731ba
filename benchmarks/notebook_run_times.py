#!/usr/bin/env python3
"""Restart & Run All time of notebooks, now against an earlier commit, measured in the same run.

    python benchmarks/notebook_run_times.py 070cfe6 notebooks/03_softmax.ipynb [...] [--repeats 3]

Each execution runs in its own process (``tools/nbtool.py``'s ``execute``, a fresh kernel), the two versions
alternating, so a busy machine slows both alike; the ratio new/old is the figure to read, and the budget is
10 s a notebook on a quiet machine (README, "Quality bar"). The earlier version is read with ``git show``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIME_ONE = ("import sys; sys.path.insert(0, {tools!r}); import nbtool; from pathlib import Path; "
            "print(nbtool.execute(Path({path!r}))[1])")


def run_time(path: Path) -> float:
    """Seconds to execute ``path`` top to bottom in a fresh kernel, timed in a process of its own."""
    code = TIME_ONE.format(tools=str(ROOT / "tools"), path=str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commit")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'notebook':<38}{'before (s)':>12}{'now (s)':>10}{'now/before':>12}")
    with tempfile.TemporaryDirectory() as folder:
        for path in args.notebooks:
            relative = path.resolve().relative_to(ROOT).as_posix()
            old = Path(folder) / "notebooks" / path.name  # the working directory of nbtool's kernel is notebooks/
            old.parent.mkdir(exist_ok=True)
            old.write_bytes(subprocess.run(["git", "show", f"{args.commit}:{relative}"], cwd=ROOT,
                                           capture_output=True, check=True).stdout)
            before, now = [], []
            for _ in range(args.repeats):
                before.append(run_time(old))
                now.append(run_time(path.resolve()))
            b, n = statistics.median(before), statistics.median(now)
            print(f"{path.name:<38}{b:>12.1f}{n:>10.1f}{n / b:>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
