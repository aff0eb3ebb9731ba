"""For the raise tests: put a replacement wherever a module of the package holds a function."""

from __future__ import annotations

import sys


def replace_everywhere(monkeypatch, original, replacement):
    """Put ``replacement`` wherever a module of the package holds ``original`` (its own module and importers)."""
    for name, module in list(sys.modules.items()):
        if name.startswith("attn_helpers"):
            for attribute, value in list(vars(module).items()):
                if value is original:
                    monkeypatch.setattr(module, attribute, replacement)
