"""The README's first screen is for a newcomer (issue 46): what it is, a picture, how to open it, how long it
takes; at most 600 words before the first command and 1,500 in all. Contributors' material lives in
CONTRIBUTING.md and docs/."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_loader import load_tool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _words(text: str) -> int:
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's address is not read
    return len(re.findall(r"[A-Za-z]+", text))


def test_the_first_screen_is_short_and_has_a_picture():
    before = README[:README.index("python3 run.py lab")]
    assert _words(before) <= 600, f"{_words(before)} words before the first command"
    assert re.search(r"!\[[^\]]{20,}\]\(docs/images/[\w.-]+\.png\)", before), "no picture (with alt text) before it"
    assert _words(README) <= 1500, f"the README has {_words(README)} words"


def test_the_picture_is_notebook_05s_figure():
    assert load_tool("readme_picture").main(["--check"]) == 0


def test_the_hours_it_states_are_the_core_paths():
    stated = int(re.search(r"about (\d+) hours in all", README).group(1))
    density = load_tool("density")
    core_path = load_tool("core_path")
    minutes = sum(core_path.core_path(p)["self_paced_minutes"]
                  for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    assert abs(stated - minutes / 60) <= 1, f"the README says about {stated} hours; the core paths add to {minutes} min"
    count = len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    names = {15: "Fifteen", 16: "Sixteen", 17: "Seventeen", 18: "Eighteen"}
    assert f"{names[count]} notebooks" in README, f"the README does not say there are {count} notebooks"
    assert density.BUDGETS["core_path_minutes"] == 75


def test_what_moved_out_is_linked():
    for target in ("docs/install.md", "CONTRIBUTING.md", "docs/accessibility.md", "docs/credits.md",
                   "docs/glossary.md", "docs/teaching-guide.md"):
        assert f"]({target})" in README and (ROOT / target).exists(), target
