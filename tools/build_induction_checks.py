#!/usr/bin/env python3
"""Maintainer tool: store notebook 16's two checks of its induction ablation (more control draws, held-out sequences).

    python tools/build_induction_checks.py      # writes attn_helpers/data/nb16_induction_checks.json (about 10 s)

Notebook 16 reads the numbers (they take 8 s, and the notebook has 30 s); tests/test_claims.py recomputes them with
``induction_checks`` and compares within a tolerance.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attn_helpers.llm import load_smollm2  # noqa: E402
from attn_helpers.llm_measures import INDUCTION_CHECKS_PATH, induction_checks  # noqa: E402


def main():
    checks = induction_checks(load_smollm2())
    INDUCTION_CHECKS_PATH.write_text(json.dumps({k: [round(float(x), 4) for x in v] for k, v in checks.items()},
                                                indent=1) + "\n", encoding="utf-8")
    print(f"wrote {INDUCTION_CHECKS_PATH}")


if __name__ == "__main__":
    main()
