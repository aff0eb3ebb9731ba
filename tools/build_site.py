#!/usr/bin/env python3
"""Build a small static site from the committed, executed notebooks: no kernel, no internet.

    python3 run.py site                                  # the usual way: writes site/index.html
    python tools/build_site.py [--out DIR] [--mathjax DIR_OR_URL]

One HTML page per notebook (``NN_topic.html``) plus ``index.html`` listing the series
in teaching order, for reading on a phone, printing handouts, or teaching where no
kernel is available. Nothing is re-executed: nbconvert's ``HTMLExporter`` renders the
outputs stored in the notebooks.

- Figures are embedded in the pages (``data:image/png``), so a page is one file.
- A live widget cannot run without a kernel. Its place shows a short note pointing to
  the static fallback figure drawn just above it by ``explorer.static(...)``.
- No script from a CDN except MathJax: no require.js, no widget manager, no mermaid.
  MathJax typesets the equations. Pass ``--mathjax DIR`` with a MathJax 2 directory
  (Debian's ``libjs-mathjax`` installs one at /usr/share/javascript/mathjax; it is
  used automatically when present) to copy the needed part into the site and read it
  fully offline; otherwise MathJax comes from a CDN when online and, offline,
  equations stay readable as their LaTeX source (each page says so).
- Pages have a mobile viewport, previous/next links and print styles.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter
from nbconvert.filters.markdown import markdown2html_mistune

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SITE = ROOT / "site"
SERIES = "Attention from first principles"

MATHJAX_CDN = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
MATHJAX_LOCAL_CANDIDATES = [Path("/usr/share/javascript/mathjax"), Path("/usr/share/mathjax")]
# The part of a MathJax 2 tree that TeX input + CommonHTML output needs (a few MB of ~40).
MATHJAX_PARTS = ["MathJax.js", "config", "extensions", "jax/input/TeX", "jax/output/CommonHTML", "jax/element",
                 "localization/en", "fonts/HTML-CSS/TeX/woff"]
MATHJAX_QUERY = "?config=TeX-AMS_CHTML-full,Safe"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = (
    '<div class="site-widget-note"><strong>Live widget.</strong> Its controls need a running kernel: open this '
    "notebook in JupyterLab (<code>python3 run.py lab</code>) or on Binder to move them. The figure above is "
    "its static version, drawn by the same code.</div>"
)

CSS = """
:root { --site-accent: #b35806; --site-max: 60rem; }
body.jp-Notebook { margin: 0; padding: 0; }
body > main { max-width: var(--site-max); margin: 0 auto; padding: 0.5rem 1rem 2rem; box-sizing: border-box; }
.site-nav { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; justify-content: space-between; align-items: center;
  max-width: var(--site-max); margin: 0 auto; padding: 0.6rem 1rem; box-sizing: border-box;
  font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 0.95rem; }
.site-nav a { color: var(--site-accent); text-decoration: none; }
.site-nav a:hover, .site-nav a:focus { text-decoration: underline; }
.site-nav .site-series { font-weight: 600; }
.site-nav-top { border-bottom: 1px solid #ddd; }
.site-nav-bottom { border-top: 1px solid #ddd; margin-top: 1.5rem; }
.site-note { max-width: var(--site-max); margin: 0 auto; padding: 0.3rem 1rem; box-sizing: border-box;
  font-size: 0.8rem; color: #666; font-family: var(--jp-ui-font-family, system-ui, sans-serif); }
.site-widget-note { border-left: 4px solid var(--site-accent); background: #fdf3e7; padding: 0.5rem 0.8rem;
  margin: 0.3rem 0; font-family: var(--jp-ui-font-family, system-ui, sans-serif); }
.jp-OutputArea-output img, .jp-RenderedMarkdown img { max-width: 100%; height: auto; }
.jp-RenderedHTMLCommon table { display: block; overflow-x: auto; max-width: 100%; }
.jp-InputArea-editor .highlight pre, .jp-OutputArea-output pre { overflow-x: auto; }
.jp-RenderedHTMLCommon .MathJax_Display, .jp-RenderedHTMLCommon .MathJax_CHTML { max-width: 100%; overflow-x: auto; }
@media (max-width: 700px) {
  body > main { padding: 0.25rem 0.4rem 1.5rem; }
  .jp-Cell { padding: 2px 0 !important; }
  .jp-InputPrompt, .jp-OutputPrompt { display: none !important; }
  .jp-RenderedHTMLCommon { padding-right: 0; font-size: 1rem; }
  .jp-CodeMirrorEditor, .jp-OutputArea-output pre { font-size: 0.8rem; }
}
@media print {
  .site-nav, .site-note { display: none; }
  body > main { max-width: none; padding: 0; }
  .jp-OutputArea-output img { break-inside: avoid; }
  .jp-Cell { break-inside: avoid-page; }
  .site-widget-note { display: none; }
}
"""

TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{% block extra_css %}
<meta name="generator" content="attn-helpers tools/build_site.py">
<style type="text/css">{{ resources.site.css }}</style>
{% endblock extra_css %}
{%- block body_header -%}
<body class="jp-Notebook" data-jp-theme-light="true" data-jp-theme-name="JupyterLab Light">
{{ resources.site.nav_top }}
<main>
{%- endblock body_header -%}
{% block body_footer %}
</main>
{{ resources.site.nav_bottom }}
{{ resources.site.note }}
</body>
{% endblock body_footer %}
"""


def notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    """The series in teaching order."""
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


def title_of(nb) -> str:
    """The first heading of the first markdown cell, e.g. ``00 · Start here: how this series works``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, flags=re.MULTILINE)
            if match:
                return match.group(1).strip()
    return ""


def goals_of(nb) -> list[str]:
    """The bullets under "you will be able to" in the first cell (markdown source)."""
    first = next((c.source for c in nb.cells if c.cell_type == "markdown"), "")
    tail = re.split(r"you will be able to[^\n]*\n", first, maxsplit=1, flags=re.IGNORECASE)
    if len(tail) < 2:
        return []
    goals = []
    for line in tail[1].splitlines():
        if re.match(r"^\s*[-*]\s+", line):
            goals.append(re.sub(r"^\s*[-*]\s+", "", line).strip())
        elif goals and line.strip() and line.startswith(" "):
            goals[-1] += " " + line.strip()
        elif goals and not line.strip():
            break
    return goals


def for_reading(nb):
    """A copy of ``nb`` for a kernel-less page: widget views become a note, widget state is dropped."""
    nb = nbformat.from_dict(nb)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for i, output in enumerate(cell.get("outputs", [])):
            if WIDGET_VIEW in output.get("data", {}):
                cell.outputs[i] = nbformat.v4.new_output("display_data", data={"text/html": WIDGET_NOTE})
    return nb


def link_pages(page: str) -> str:
    """Links between notebooks point to the pages: ``01_x.ipynb`` -> ``01_x.html``."""
    return re.sub(r'href="(\d\d_[\w.-]+?)\.ipynb(#[^"]*)?"', r'href="\1.html\2"', page)


def nav(previous: tuple[str, str] | None, following: tuple[str, str] | None, where: str) -> str:
    def link(item, rel, arrow_left):
        if not item:
            return "<span></span>"
        href, text = item
        label = f"← {html.escape(text)}" if arrow_left else f"{html.escape(text)} →"
        return f'<a rel="{rel}" href="{html.escape(href)}">{label}</a>'

    return (f'<nav class="site-nav site-nav-{where}" aria-label="series">'
            f"{link(previous, 'prev', True)}"
            f'<a class="site-series" href="index.html">{html.escape(SERIES)}: contents</a>'
            f"{link(following, 'next', False)}</nav>")


def find_local_mathjax(explicit: str | None) -> Path | None:
    candidates = [Path(explicit)] if explicit else MATHJAX_LOCAL_CANDIDATES
    for folder in candidates:
        if (folder / "MathJax.js").is_file() and (folder / "config").is_dir():
            return folder
    return None


def copy_mathjax(source: Path, out: Path) -> str:
    """Copy the TeX -> CommonHTML part of a MathJax 2 tree into ``out/mathjax``; return the page URL."""
    target = out / "mathjax"
    for part in MATHJAX_PARTS:
        src = source / part
        if src.is_dir():
            shutil.copytree(src, target / part, dirs_exist_ok=True, ignore_dangling_symlinks=True)
        elif src.is_file():
            (target / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target / part)
    return "mathjax/MathJax.js" + MATHJAX_QUERY


def mathjax_setting(option: str | None, out: Path) -> tuple[str, str]:
    """(URL for the pages, a note for the reader)."""
    if option and re.match(r"^https?://", option):
        return option, "Equations are typeset by MathJax, loaded from the web."
    local = find_local_mathjax(option)
    if option and local is None:
        raise SystemExit(f"--mathjax {option}: no MathJax 2 (MathJax.js and config/) there")
    if local is not None:
        return copy_mathjax(local, out), "Equations are typeset by a copy of MathJax bundled with these pages."
    return MATHJAX_CDN, ("Equations are typeset by MathJax, loaded from a CDN when online; offline they show "
                         "as their LaTeX source, e.g. $d_{model}$.")


def exporter(mathjax_url: str) -> HTMLExporter:
    return HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"site.html.j2": TEMPLATE})],
        template_file="site.html.j2",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,  # markdown images too, not only outputs
        mathjax_url=mathjax_url,
    )


def index_page(entries: list[dict], mathjax_url: str, note: str) -> str:
    items = []
    for entry in entries:
        goals = "".join(f"<li>{markdown2html_mistune(g).strip().removeprefix('<p>').removesuffix('</p>')}</li>"
                        for g in entry["goals"])
        goals_html = f'<ul class="site-goals">{goals}</ul>' if goals else ""
        items.append(f'<li><a href="{entry["page"]}">{html.escape(entry["title"])}</a>{goals_html}</li>')
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>{html.escape(SERIES)}</title>
<style type="text/css">{CSS}
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; }}
.site-index {{ line-height: 1.5; }}
.site-index ol {{ padding-left: 0; list-style: none; }}
.site-index ol > li {{ margin: 0.9rem 0; }}
.site-index ol > li > a {{ font-size: 1.15rem; color: var(--site-accent); font-weight: 600; }}
.site-goals {{ margin: 0.2rem 0 0; padding-left: 1.2rem; list-style: disc; color: #333; font-size: 0.95rem; }}
.site-goals li {{ overflow-x: auto; }}
</style>
<script src="{html.escape(mathjax_url)}"></script>
<script type="text/x-mathjax-config">
MathJax.Hub.Config({{tex2jax: {{inlineMath: [['$','$'], ['\\\\(','\\\\)']], processEscapes: true}},
                   messageStyle: 'none', CommonHTML: {{linebreaks: {{automatic: true}}}}}});
</script>
</head>
<body>
<main class="site-index">
<h1>{html.escape(SERIES)}</h1>
<p>An interactive notebook series on transformer attention, here as static pages: every figure, printed
number and exercise feedback as stored in the notebooks. The widgets need a running kernel
(<code>python3 run.py lab</code>); each one has a static figure just above it.</p>
<ol start="0">
{chr(10).join(items)}
</ol>
</main>
<div class="site-note">{html.escape(note)}</div>
</body>
</html>
"""


def build(out: Path = SITE, folder: Path = NOTEBOOKS, mathjax: str | None = None) -> list[Path]:
    """Write one page per notebook plus ``index.html`` into ``out``; return the pages written."""
    paths = notebooks(folder)
    if not paths:
        raise SystemExit(f"no notebooks (NN_*.ipynb) in {folder}")
    out.mkdir(parents=True, exist_ok=True)
    mathjax_url, note = mathjax_setting(mathjax, out)
    html_exporter = exporter(mathjax_url)

    loaded = [(path, nbformat.read(path, as_version=4)) for path in paths]
    entries = [{"page": f"{path.stem}.html", "title": title_of(nb) or path.stem, "goals": goals_of(nb)}
               for path, nb in loaded]
    written = []
    for i, (path, nb) in enumerate(loaded):
        previous = (entries[i - 1]["page"], entries[i - 1]["title"]) if i > 0 else None
        following = (entries[i + 1]["page"], entries[i + 1]["title"]) if i + 1 < len(entries) else None
        resources = {
            "metadata": {"name": entries[i]["title"], "path": str(path.parent)},
            "site": {"css": CSS, "nav_top": nav(previous, following, "top"),
                     "nav_bottom": nav(previous, following, "bottom"),
                     "note": f'<div class="site-note">{html.escape(note)}</div>'},
        }
        body, _ = html_exporter.from_notebook_node(for_reading(nb), resources=resources)
        page = out / entries[i]["page"]
        page.write_text(link_pages(body), encoding="utf-8")
        written.append(page)

    index = out / "index.html"
    index.write_text(index_page(entries, mathjax_url, note), encoding="utf-8")
    return [index, *written]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=SITE, help="output folder (default: site/)")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="folder with NN_*.ipynb")
    parser.add_argument("--mathjax", help="a MathJax 2 folder to bundle, or a MathJax URL (default: a local "
                        "Debian libjs-mathjax if installed, else the CDN)")
    args = parser.parse_args(argv)
    pages = build(args.out.resolve(), args.notebooks.resolve(), args.mathjax)
    size = sum(p.stat().st_size for p in pages) / 1e6
    print(f"wrote {len(pages)} pages ({size:.1f} MB) to {args.out.resolve()}/; open {pages[0].resolve()} in a browser "
          "(works from the file system, no server needed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
