#!/usr/bin/env python3
"""Memory per active student on a JupyterHub, and the sizing it implies (docs/teaching-guide.md's table).

A real JupyterHub on 127.0.0.1 (tools/hub.py: dummy authenticator, one local server per student, nbgitpuller),
30 students by default. Each logs in, starts a server and pulls the series with the hub link; then, two
students at a time (``--parallel``), each runs notebooks 00, 12 and 14 (and 15 where the series has it) top to
bottom in kernels of their server, each kernel left running as JupyterLab leaves it; after each notebook the
resident memory (RSS) of the student's server and kernels is read from /proc; then their kernels are shut down.
All 30 servers stay up throughout. Linux only.

    python benchmarks/bench_hub.py                  # 30 students; prints the table; writes benchmarks/hub.json
    python benchmarks/bench_hub.py --students 3     # a quick look
    python benchmarks/bench_hub.py --write-guide    # rewrites the guide's sizing table from benchmarks/hub.json

The sizing (``sizing`` below): ``singleuser.memory.guarantee`` holds the heaviest notebook of the largest
measured student (server + one kernel), so a node never runs short when the whole class runs the same notebook;
``singleuser.memory.limit`` holds every notebook's kernel left running at once (the largest student); both
rounded up to 128 MiB. Students per node: the node's allocatable memory (what Kubernetes leaves to pods after
its own reserve; GKE's published formula, below) over the guarantee.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import hub as hub_tool  # noqa: E402

RECORD = ROOT / "benchmarks" / "hub.json"
GUIDE = ROOT / "docs" / "teaching-guide.md"
START, END = "<!-- bench_hub table -->", "<!-- /bench_hub table -->"
NODES_GIB = (8, 16, 32)
MIB = 1024


def reserved_gib(node_gib: float) -> float:
    """Memory Kubernetes keeps for itself on a node (GKE's published formula: 25 % of the first 4 GiB, 20 % of
    the next 4, 10 % of the next 8, 6 % of the next 112, 2 % above) plus its 100 MiB eviction threshold."""
    bands = [(4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06), (math.inf, 0.02)]
    left, reserved = node_gib, 0.0
    for size, share in bands:
        part = min(left, size)
        reserved, left = reserved + part * share, left - part
    return reserved + 100 / 1024


def measure(students: int, notebooks: list[str], parallel: int) -> dict:
    proxy = hub_tool.proxy_command()
    if proxy is None:
        raise SystemExit("configurable-http-proxy is not installed: " + hub_tool.PROXY_HELP)
    with tempfile.TemporaryDirectory(prefix="bench-hub-") as tmp:
        upstream = hub_tool.checkout_as_git_repo(Path(tmp) / "teacher" / "attention-notebooks")
        hub = hub_tool.Hub(Path(tmp) / "hub", proxy)
        try:
            names = [f"student{k:02d}" for k in range(1, students + 1)]
            hub.add_students(names)
            tokens, started = {}, time.perf_counter()

            def arrive(name):  # log in, start the server, click the hub link
                tokens[name] = hub.log_in(name)
                hub.start_server(name, tokens[name])
                hub.pull(name, tokens[name], upstream.as_uri())

            with ThreadPoolExecutor(parallel) as pool:
                list(pool.map(arrive, names))
            print(f"{students} servers started and pulled in {time.perf_counter() - started:.0f} s", flush=True)

            def work(name):  # Run All in each notebook, its kernel left running; then the kernels shut down
                row = {"server": hub_tool.memory_kib(hub.processes(name))["rss"]}
                sessions = []
                for number in notebooks:
                    path = next((hub.homes / name / "attention-notebooks" / "notebooks").glob(f"{number}_*.ipynb"))
                    nb, session = hub.run_notebook(name, tokens[name], str(path.relative_to(hub.homes / name)),
                                                   keep=True)
                    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                              if o.output_type == "error"]
                    if errors:
                        raise RuntimeError(f"{name}: notebook {number} raised {errors[0].ename}: {errors[0].evalue}")
                    sessions.append(session)
                    row[number] = hub_tool.memory_kib(hub.processes(name))["rss"]
                for session in sessions:
                    hub.api("DELETE", f"/user/{name}/api/sessions/{session}", token=tokens[name])
                print(name, {key: f"{value / MIB:.0f} MiB" for key, value in row.items()}, flush=True)
                return row

            with ThreadPoolExecutor(parallel) as pool:
                rows = dict(zip(names, pool.map(work, names)))
            hub_rss = hub_tool.memory_kib([hub.process.pid])["rss"]
        finally:
            hub.stop()
    return {"students": students, "notebooks": notebooks, "kib": rows, "hub_kib": hub_rss,
            "date": time.strftime("%Y-%m-%d")}


def sizing(record: dict) -> dict:
    """Per-notebook memory of one student (server + that notebook's kernel), and the values the guide gives."""
    rows, notebooks = list(record["kib"].values()), record["notebooks"]
    one_kernel = {}  # the server plus the kernel of this notebook alone
    for k, number in enumerate(notebooks):
        before = [row[notebooks[k - 1]] if k else row["server"] for row in rows]
        one_kernel[number] = [row["server"] + row[number] - b for row, b in zip(rows, before)]
    all_open = [row[notebooks[-1]] for row in rows]
    guarantee = _round_up(max(max(values) for values in one_kernel.values()))
    limit = max(_round_up(max(all_open)), guarantee)
    nodes = {gib: int((gib - reserved_gib(gib)) * 1024 // (guarantee / MIB)) for gib in NODES_GIB}
    return {"server": [row["server"] for row in rows], "one_kernel": one_kernel, "all_open": all_open,
            "guarantee_mib": guarantee // MIB, "limit_mib": limit // MIB, "per_node": nodes}


def _round_up(kib: float) -> int:
    return int(math.ceil(kib / (128 * MIB)) * 128 * MIB)


def table(record: dict) -> str:
    """The guide's sizing table (markdown), from a benchmark record."""
    size = sizing(record)
    mib = lambda values: f"{statistics.median(values) / MIB:.0f} / {max(values) / MIB:.0f}"  # noqa: E731
    lines = [f"Measured by `benchmarks/bench_hub.py` on {record['date']}: {record['students']} students on one "
             f"JupyterHub, each server and its kernels' resident memory (RSS), median / largest over the students, "
             f"MiB (the hub itself: {record['hub_kib'] / MIB:.0f} MiB). The guarantee holds the heaviest notebook "
             f"(a server and that notebook's kernel) of the largest student, so a node never runs short when the whole "
             f"class runs the same notebook; the limit holds every notebook's kernel left running at once.", "",
             "| a student's server with | median / largest, MiB |", "| --- | --- |",
             f"| no kernel (JupyterLab open, after the pull) | {mib(size['server'])} |"]
    lines += [f"| the kernel of notebook {number} after Run All | {mib(size['one_kernel'][number])} |"
              for number in record["notebooks"]]
    lines += [f"| all of {', '.join(record['notebooks'])} left running | {mib(size['all_open'])} |", "",
              "| Zero to JupyterHub value | |", "| --- | --- |",
              f"| `singleuser.memory.guarantee` | {size['guarantee_mib']}M |",
              f"| `singleuser.memory.limit` | {size['limit_mib']}M |"]
    lines += [f"| students per {gib} GB node | {count} |" for gib, count in size["per_node"].items()]
    lines += ["", "In Zero to JupyterHub's `config.yaml` (the image: see above):", "", "```yaml", "singleuser:",
              "  image:", "    name: registry.example.edu/attention-notebooks", '    tag: "COMMIT"',
              "  defaultUrl: /lab", "  memory:", f"    guarantee: {size['guarantee_mib']}M",
              f"    limit: {size['limit_mib']}M", "```"]
    return "\n".join(lines)


def write_guide(record: dict) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{GUIDE.name} has no {START} ... {END} markers")
    GUIDE.write_text(pattern.sub(lambda _: f"{START}\n{table(record)}\n{END}", text), encoding="utf-8")
    print(f"wrote the sizing table into {GUIDE.relative_to(ROOT)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--parallel", type=int, default=2, help="students working at the same moment (default 2)")
    parser.add_argument("--write-guide", action="store_true", help="rewrite the guide's table from hub.json (no run)")
    args = parser.parse_args(argv)
    if args.write_guide:
        write_guide(json.loads(RECORD.read_text()))
        return 0
    have = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    notebooks = [n for n in ("00", "12", "14", "16") if n in have]
    print(f"notebooks measured: {', '.join(notebooks)}" + ("" if "16" in have else " (there is no notebook 16)"))
    record = measure(args.students, notebooks, args.parallel)
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    print(table(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
