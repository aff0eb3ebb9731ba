"""The teaching guide's section 13 says what notebook 13 shows about the KV cache.

The numbers of its discussion questions are recomputed here (the cache sizes from the published
configurations, the multiply-add count written out again), and compared with the notebook's stored
outputs where the notebook prints them; the core-path minutes are the ones tools/core_path.py computes.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from attn_helpers.kv_cache import PUBLISHED_CONFIGS, kv_cache_bytes

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
NOTEBOOK = ROOT / "notebooks" / "13_efficient_attention.ipynb"


def section() -> str:
    match = re.search(r"^### 13 · .*?(?=^##)", GUIDE, flags=re.MULTILINE | re.DOTALL)
    assert match, "no section 13 in the teaching guide"
    return match.group(0)


def stored_output(cell_id: str) -> str:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    (cell,) = [cell for cell in cells if cell.get("id") == cell_id]
    return "".join("".join(output.get("text", "")) for output in cell["outputs"])


def test_core_path_minutes_are_the_ones_the_tool_computes():
    spec = importlib.util.spec_from_file_location("core_path", ROOT / "tools" / "core_path.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    result = tool.series_minutes(GUIDE, ROOT)["13"]
    assert (f"**Core path:** {result['self_paced_minutes']} min self-paced, {result['walkthrough_minutes']} min "
            "walk-through.") in section()


def gib(name, T=4096):
    config = PUBLISHED_CONFIGS[name]
    return config["num_layers"] * 2 * config["num_kv_heads"] * config["head_dim"] * T * 2 / 2**30  # float16


def test_cache_sizes_in_the_discussion():
    text, table = section(), stored_output("13-036")
    for name, value, quoted in (("Llama 2 70B", 1.25, "(1.25 GiB)"), ("Llama 2 7B", 2.0, "(2 GiB)"),
                                ("Mistral 7B", 0.5, "(0.50 GiB)")):
        assert gib(name) == value and quoted in text, name
        assert f"{value:.2f} GiB" in next(line for line in table.splitlines() if line.startswith(name))
    assert PUBLISHED_CONFIGS["Falcon 7B"]["num_heads"] == 71 and "71 query heads" in text
    assert all(config["context_length"] < 131072 for config in PUBLISHED_CONFIGS.values())
    assert "None of the models in the table reads 128k tokens" in text
    assert "None of the six" not in text  # the table has more rows than that: say it without a count


def test_multiply_add_count_in_the_discussion():
    d_model, d_ff, layers = 64, 256, 2

    def count(T, rows):
        return layers * rows * (4 * d_model**2 + 2 * d_model * d_ff + 2 * T * d_model)

    def attention_share(T):
        return 2 * T * d_model / (4 * d_model**2 + 2 * d_model * d_ff + 2 * T * d_model)

    assert count(512, rows=512) // count(512, rows=1) == 512 and "512 times the multiply-adds" in section()
    assert (round(100 * attention_share(32)), round(100 * attention_share(512))) == (8, 57)
    assert "from 8 % at 32 tokens to 57 % at 512" in section()
    printed = stored_output("13-052")
    assert f"{count(512, 512):,}" in printed and f"{count(512, 1):,}" in printed and "57%" in printed


def test_grouped_query_cache_fractions_in_the_discussion():
    printed = stored_output("13-054")
    for h_kv, fraction in ((2, "1/4"), (1, "1/8")):
        held = kv_cache_bytes(num_layers=2, num_kv_heads=h_kv, head_dim=8, T=100, bytes_per_number=4)
        assert kv_cache_bytes(2, 8, 8, 100, 4) // held == int(fraction[2:])
        assert f"{held:>6} bytes (= kv_cache_bytes: True), {fraction} of the cache with 8" in printed
    assert "with 2 key/value heads is 1/4 of the one with 8, with 1 head 1/8" in section()


def cells():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def test_widget_paragraph_names_a_row_the_notebook_shows():
    text = section()
    assert 'pick "pos 3"' in text and "jump at tile 5" in text
    assert "After tile 6, 'pos 3' has running max" in stored_output("13-022")


def test_optional_cells_are_the_ones_the_guide_names_and_say_so_first():
    optional = [cell for cell in cells() if "optional" in cell.get("metadata", {}).get("tags", [])]
    sources = ["".join(cell["source"]) for cell in optional]
    assert any("show_source(tiled_attention" in source or "getsource(tiled_attention)" in source for source in sources)
    assert any("PUBLISHED_CONFIGS" in source for source in sources)
    assert "source of the package's `tiled_attention` and the sources of the published configurations" in section()
    for source in sources:
        first = re.sub(r"^(?:#@title|#+|\*+|\s)+", "", source.strip()).splitlines()[0].lower()  # heading, form, italics
        assert first.startswith("optional"), first


def test_the_cache_prediction_is_asked_before_the_table_prints_it():
    ids = [cell.get("id") for cell in cells()]
    assert ids.index("13-039") < ids.index("13-036")  # check_cache_prediction, then the table
    assert "check_cache_prediction" in "".join(cells()[ids.index("13-039")]["source"])
    assert "asked before the table prints the answer" in section()


def test_every_decimal_of_the_discussion_is_printed_by_the_notebook_or_the_benchmark():
    """A number the guide quotes is one the class can see: in the notebook's stored outputs, or (the causal
    speed-up, marked as such) in the benchmark's record. Timings of a build machine are not quoted."""
    bullet = re.search(r"^- \*\*Discussion[^\n]*", section(), flags=re.MULTILINE).group(0)
    printed = " ".join("".join("".join(output.get("text", "")) for output in cell.get("outputs", []))
                       for cell in cells() if cell["cell_type"] == "code")
    benchmark = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    for match in re.finditer(r"\d+\.\d+(x?)", bullet):
        number = match.group(0).removesuffix("x")
        assert number in (benchmark if match.group(1) else printed), number
    assert "build machine" not in section() and "three runs" not in section()
