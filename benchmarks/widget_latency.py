#!/usr/bin/env python3
"""How long a widget takes to answer a control change, for every explorer of every notebook.

Drives each explorer's callback programmatically (no browser): for every control it
steps through several values (each dropdown option, a few slider positions, both
checkbox states, for a text box the sentences the explorer lists in ``samples``) and
times ``render_png()``: drawing the figure and encoding the PNG that the browser
receives, which is what one control change costs the kernel. A text box has a line of
its own (a new sentence runs a model: the slowest path of its explorer).

    python benchmarks/widget_latency.py            # table + PASS/FAIL against the 100 ms target
    python benchmarks/widget_latency.py nb12       # only the explorers whose name contains "nb12"

Exit status 1 if any explorer's median, or a text box's, is over the target.
"""

from __future__ import annotations

import importlib
import pkgutil
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402

import attn_helpers.widgets as widget_pkg  # noqa: E402
from attn_helpers.plotting import setup_style  # noqa: E402

TARGET_MS = 100.0


def control_values(control, samples=()):
    """A few values worth setting on ``control``, in an order a person might try them.

    ``samples``: what the explorer suggests typing into a text box (the current text is skipped:
    setting it again changes nothing).
    """
    if samples:
        return [value for value in samples if value != control.value]
    options = getattr(control, "options", None)
    if options:  # dropdowns, selection sliders
        labels = list(options)
        values = [o[1] if isinstance(o, tuple) else o for o in labels]
        return values[:: max(1, len(values) // 5)] or values
    if isinstance(control.value, bool):
        return [not control.value, control.value]
    if hasattr(control, "min") and hasattr(control, "max"):
        lo, hi = control.min, control.max
        points = np.linspace(lo, hi, 5)
        if isinstance(control.value, int):
            return sorted({int(round(p)) for p in points})
        return [float(p) for p in points]
    return [control.value]


def explorers():
    for info in sorted(pkgutil.iter_modules(widget_pkg.__path__), key=lambda m: m.name):
        if not info.name.startswith("nb"):
            continue
        module = importlib.import_module(f"{widget_pkg.__name__}.{info.name}")
        for name, factory in getattr(module, "EXPLORERS", {}).items():
            yield f"{info.name}.{name}", factory


def measure(factory, repeats=1):
    """The times of ``render_png`` (ms) for each control of a new explorer, by control name."""
    explorer = factory()
    explorer.render_png()  # warm-up: fonts, caches
    times = {}
    for name, control in explorer.controls.items():
        times[name] = []
        for value in control_values(control, explorer.samples.get(name, ())):
            for _ in range(repeats):
                start = time.perf_counter()
                explorer.render_png(**{name: value})
                times[name].append((time.perf_counter() - start) * 1000)
        explorer.render_png()  # back to the controls' own values, untimed (a text override left a new sentence)
    return explorer, times


def _row(label, times):
    median = statistics.median(times)
    return (label, len(times), median, max(times), "PASS" if median < TARGET_MS else "FAIL")


def main(only=()) -> int:
    setup_style()
    rows = []
    for label, factory in explorers():
        if only and not any(part in label for part in only):
            continue
        explorer, times = measure(factory)
        rows.append(_row(label, [t for control in times.values() for t in control]))
        for name, control in explorer.controls.items():
            if isinstance(control, widgets.Text) and times[name]:  # typed text: its own line
                rows.append(_row(f"  {name} (a new sentence)", times[name]))
    print(f"{'explorer':<34} {'n':>3} {'median ms':>10} {'max ms':>8}  target < {TARGET_MS:.0f} ms median")
    for label, n, median, worst, verdict in rows:
        print(f"{label:<34} {n:>3} {median:>10.1f} {worst:>8.1f}  {verdict}")
    return 1 if any(verdict == "FAIL" for *_, verdict in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
