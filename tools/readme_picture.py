#!/usr/bin/env python3
"""The README's picture: notebook 05's query-key-value explorer, as its static figure stored in the notebook.

    python tools/readme_picture.py          # write docs/images/explorer_05.png from the notebook's stored output
    python tools/readme_picture.py --check  # exit 1 if the picture differs from the notebook's figure

The picture is the notebook's own output (cell ``CELL_ID``), so it cannot drift from the lesson: after
re-executing notebook 05, run this again (``tests/test_series_map.py`` fails until it has run).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "05_qkv_projections.ipynb"
CELL_ID = "05-038"
PICTURE = ROOT / "docs" / "images" / "explorer_05.png"


def figure() -> bytes:
    """The PNG that cell ``CELL_ID`` of notebook 05 stores."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if c.get("id") == CELL_ID)
    png = next(o["data"]["image/png"] for o in cell["outputs"] if "image/png" in o.get("data", {}))
    return base64.b64decode(png)


def main(argv) -> int:
    if "--check" in argv:
        same = PICTURE.exists() and PICTURE.read_bytes() == figure()
        if not same:
            print(f"{PICTURE.relative_to(ROOT)} differs from notebook 05's figure: run python tools/readme_picture.py")
        return 0 if same else 1
    PICTURE.parent.mkdir(parents=True, exist_ok=True)
    PICTURE.write_bytes(figure())
    print(f"wrote {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
