#!/usr/bin/env python3
"""How long a widget takes to answer a control change, for every explorer of every notebook.

Drives each explorer's callback programmatically (no browser): for every control it
steps through several values (each dropdown option, a few slider positions, both
checkbox states) and times ``render_png()``: drawing the figure and encoding the PNG
that the browser receives, which is what one control change costs the kernel.

    python benchmarks/widget_latency.py            # table + PASS/FAIL against the 100 ms target

Exit status 1 if any explorer's median is over the target.
"""

from __future__ import annotations

import importlib
import pkgutil
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import attn_helpers.widgets as widget_pkg  # noqa: E402
from attn_helpers.plotting import setup_style  # noqa: E402

TARGET_MS = 100.0


def control_values(control):
    """A few values worth setting on ``control``, in an order a person might try them."""
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
    explorer = factory()
    explorer.render_png()  # warm-up: fonts, caches
    times = []
    for name, control in explorer.controls.items():
        original = control.value
        for value in control_values(control):
            for _ in range(repeats):
                start = time.perf_counter()
                explorer.render_png(**{name: value})
                times.append((time.perf_counter() - start) * 1000)
        control.value = original
    return times


def main() -> int:
    setup_style()
    rows, failed = [], False
    for label, factory in explorers():
        times = measure(factory)
        median = statistics.median(times)
        ok = median < TARGET_MS
        failed |= not ok
        rows.append((label, len(times), median, max(times), "PASS" if ok else "FAIL"))
    print(f"{'explorer':<34} {'n':>3} {'median ms':>10} {'max ms':>8}  target < {TARGET_MS:.0f} ms median")
    for label, n, median, worst, verdict in rows:
        print(f"{label:<34} {n:>3} {median:>10.1f} {worst:>8.1f}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
