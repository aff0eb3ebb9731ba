#!/usr/bin/env python3
"""Build a small static site from the committed, executed notebooks: no kernel, no internet.

    python3 run.py site                                  # the usual way: writes site/index.html
    python tools/build_site.py [--out DIR]

One HTML page per notebook (``NN_topic.html``) plus ``index.html`` listing the series
in teaching order, for reading on a phone, printing handouts, or teaching where no
kernel is available. Nothing is re-executed: nbconvert's ``HTMLExporter`` renders the
outputs stored in the notebooks.

- Figures are embedded in the pages (``data:image/png``), so a page is one file.
- A live widget cannot run without a kernel. Its place shows a short note pointing to
  the static fallback figure drawn just above it by ``explorer.static(...)``.
- No script at all, and nothing from the network: equations are converted from LaTeX to
  MathML when the site is built (``latex2mathml``), which browsers render natively. An
  equation the converter cannot handle stops the build with its source (see
  ``MathError``), so a page never shows raw ``$...$``.
- Every figure has alt text: the code cell's ``alt`` metadata when the notebook gives one
  (a string, or a list with one entry per figure of the cell), else the first sentence
  of the markdown cell above the figure, which introduces it.
- Pages have a mobile viewport, previous/next links and print styles.
- Accessible (WCAG 2.1 AA, checked with axe-core by tests/browser/test_a11y.py): code in a
  highlighting style made for contrast (``CODE_STYLE``, from accessible-pygments), links in the
  text underlined, code and outputs wrapped rather than scrolled sideways, and each display
  equation in a box that the Tab key reaches, so that a wide one can be scrolled by keyboard.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader, pass_context
from latex2mathml.converter import convert as latex_to_mathml
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SITE = ROOT / "site"
GLOSSARY = ROOT / "docs" / "glossary.md"
SERIES = "Attention from first principles"
CODE_STYLE = "a11y-light"  # accessible-pygments: every colour at least 4.5:1 on its background

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
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { overflow-wrap: anywhere; }  /* a table wraps, never scrolls */
main .jp-RenderedHTMLCommon a:any-link, main a { text-decoration: underline; }  /* not told apart by colour alone */
.jp-InputArea-editor .highlight pre, .jp-OutputArea-output pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.site-equation { margin: 0.6em 0; max-width: 100%; overflow-x: auto; }
.site-equation:focus-visible { outline: 2px solid var(--site-accent); outline-offset: 2px; }
math[display="block"] { display: block; margin: 0; font-size: 1.1em; }
math { font-family: "STIX Two Math", "Cambria Math", "Latin Modern Math", math; }
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
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
{%- set alt = output.metadata.get('image/png', {}).get('alt', '') %}
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}" alt="{{ alt | escape_html }}">
</div>
{%- endblock data_png %}
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


class MathError(ValueError):
    """An equation latex2mathml cannot convert (the message shows its LaTeX)."""


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, with every equation converted to MathML at build time."""

    def block_math(self, body: str) -> str:
        return equation(body)

    def inline_math(self, body: str) -> str:
        return mathml(body, display="inline")

    def latex_environment(self, name: str, body: str) -> str:
        return equation(f"\\begin{{{name}}}{body}\\end{{{name}}}")


def mathml(latex: str, display: str = "inline") -> str:
    """``latex`` as a MathML element, with the LaTeX kept as its annotation (copy-paste, screen readers).

    >>> print(mathml("d_k").replace('xmlns="http://www.w3.org/1998/Math/MathML" ', "").replace("><", ">\\n<"))
    <math display="inline">
    <semantics>
    <mrow>
    <msub>
    <mi>d</mi>
    <mi>k</mi>
    </msub>
    </mrow>
    <annotation encoding="application/x-tex">d_k</annotation>
    </semantics>
    </math>
    """
    try:
        element = latex_to_mathml(latex.strip(), display=display)
    except Exception as err:  # noqa: BLE001 - the converter raises many kinds; name the equation instead
        raise MathError(f"cannot convert the equation ${latex}$ to MathML ({type(err).__name__}: {err})") from None
    opening, rest = element.split(">", 1)
    inner = rest.removesuffix("</math>")
    source = html.escape(latex.strip(), quote=False)
    annotation = f'<annotation encoding="application/x-tex">{source}</annotation>'
    return f"{opening}><semantics>{inner}{annotation}</semantics></math>"


def equation(latex: str) -> str:
    """A display equation: its MathML in a box that scrolls sideways when the equation is wider than the
    page, and that the Tab key reaches so that the arrow keys can scroll it."""
    return f'<div class="site-equation" tabindex="0" role="group" aria-label="equation">{mathml(latex, "block")}</div>'


def markdown_to_html(text: str, **options) -> str:
    """Markdown with ``$...$`` / ``$$...$$`` math to HTML with MathML."""
    return MarkdownWithMath(renderer=MathMLRenderer(escape=False, **options)).render(text)


def inline_html(text: str) -> str:
    """One line of markdown (a title, a goal) as inline HTML, its math as MathML."""
    return markdown_to_html(text).strip().removeprefix("<p>").removesuffix("</p>")


class SiteExporter(HTMLExporter):
    """nbconvert's HTML exporter with :class:`MathMLRenderer` for the markdown cells and outputs."""

    @pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        return markdown_to_html(
            source, attachments=cell.get("attachments", {}), embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options)


def plain_text(markdown: str) -> str:
    """Markdown reduced to plain text for an alt attribute: no markup, math as its symbols."""
    text = re.sub(r"\$\$?([^$]+)\$\$?", lambda m: re.sub(r"\\([A-Za-z]+)|[{}]", r"\1", m.group(1)), markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links and images: keep their text
    text = re.sub(r"^#+\s*|^>\s*|[*`]|(?<!\w)_|_(?!\w)", "", text, flags=re.M)  # keep the _ of W_q
    return " ".join(text.split())


def figure_alts(nb) -> dict[tuple[int, int], str]:
    """Alt text for each ``image/png`` output, keyed by (cell index, output index)."""
    alts = {}
    introduction = ""
    for c, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            text = plain_text(cell.source)
            # The first sentence; "5. Watch it learn" is a numbered heading, not a sentence of its own.
            introduction = re.split(r"(?<=[^\d\s][.!?:])\s", text, maxsplit=1)[0][:250] if text else introduction
            continue
        if cell.cell_type != "code":
            continue
        given = cell.metadata.get("alt")
        given = [given] if isinstance(given, str) else list(given or [])
        figures = [o for o, output in enumerate(cell.get("outputs", [])) if "image/png" in output.get("data", {})]
        for k, o in enumerate(figures):
            alts[c, o] = given[k] if k < len(given) else f"Figure: {introduction}" if introduction else "Figure"
    return alts


def for_reading(nb):
    """A copy of ``nb`` for a kernel-less page: widget views become a note, widget state is dropped,
    every figure gets its alt text."""
    nb = nbformat.from_dict(nb)
    nb.metadata.pop("widgets", None)
    alts = figure_alts(nb)
    for c, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for i, output in enumerate(cell.get("outputs", [])):
            if WIDGET_VIEW in output.get("data", {}):
                cell.outputs[i] = nbformat.v4.new_output("display_data", data={"text/html": WIDGET_NOTE})
            elif (c, i) in alts:
                output.setdefault("metadata", {}).setdefault("image/png", {})["alt"] = alts[c, i]
    return nb


def link_pages(page: str) -> str:
    """Links between notebooks point to the pages: ``01_x.ipynb`` -> ``01_x.html``; the glossary's to its page."""
    page = re.sub(r'href="(\d\d_[\w.-]+?)\.ipynb(#[^"]*)?"', r'href="\1.html\2"', page)
    return re.sub(r'href="(?:\.\./)?docs/glossary\.md(#[^"]*)?"', r'href="glossary.html\1"', page)


def nav(previous: tuple[str, str] | None, following: tuple[str, str] | None, where: str) -> str:
    def link(item, rel, arrow_left):
        if not item:
            return "<span></span>"
        href, text = item
        label = f"← {inline_html(text)}" if arrow_left else f"{inline_html(text)} →"
        return f'<a rel="{rel}" href="{html.escape(href)}">{label}</a>'

    return (f'<nav class="site-nav site-nav-{where}" aria-label="series">'
            f"{link(previous, 'prev', True)}"
            f'<a class="site-series" href="index.html">{html.escape(SERIES)}: contents</a>'
            f"{link(following, 'next', False)}</nav>")


def exporter() -> HTMLExporter:
    return SiteExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"site.html.j2": TEMPLATE})],
        template_file="site.html.j2",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,  # markdown images too, not only outputs
        config=Config({"CSSHTMLHeaderPreprocessor": {"style": CODE_STYLE}}),
    )


def glossary_page(note: str) -> str:
    """``docs/glossary.md`` as a page of its own (the notebooks' first cells link to it)."""
    body = markdown_to_html(GLOSSARY.read_text(encoding="utf-8"))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Glossary · {html.escape(SERIES)}</title>
<style type="text/css">{CSS}
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #bbb; padding: 0.2rem 0.4rem; vertical-align: top; }}
</style>
</head>
<body>
<main class="site-index">
<nav class="site-nav site-nav-top" aria-label="series">
<a class="site-series" href="index.html">{html.escape(SERIES)}: contents</a></nav>
{body}
</main>
<div class="site-note">{html.escape(note)}</div>
</body>
</html>
"""


def index_page(entries: list[dict], note: str) -> str:
    items = []
    for entry in entries:
        goals = "".join(f"<li>{inline_html(g)}</li>"
                        for g in entry["goals"])
        goals_html = f'<ul class="site-goals">{goals}</ul>' if goals else ""
        items.append(f'<li><a href="{entry["page"]}">{inline_html(entry["title"])}</a>{goals_html}</li>')
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
.site-goals li {{ overflow-wrap: anywhere; }}
</style>
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


def build(out: Path = SITE, folder: Path = NOTEBOOKS) -> list[Path]:
    """Write one page per notebook plus ``index.html`` into ``out``; return the pages written."""
    paths = notebooks(folder)
    if not paths:
        raise SystemExit(f"no notebooks (NN_*.ipynb) in {folder}")
    out.mkdir(parents=True, exist_ok=True)
    note = "Equations are MathML, made when the site was built: the pages need no script and no network."
    html_exporter = exporter()

    loaded = [(path, nbformat.read(path, as_version=4)) for path in paths]
    entries = [{"page": f"{path.stem}.html", "title": title_of(nb) or path.stem, "goals": goals_of(nb)}
               for path, nb in loaded]
    written = []
    for i, (path, nb) in enumerate(loaded):
        previous = (entries[i - 1]["page"], entries[i - 1]["title"]) if i > 0 else None
        following = (entries[i + 1]["page"], entries[i + 1]["title"]) if i + 1 < len(entries) else None
        resources = {
            "metadata": {"name": plain_text(entries[i]["title"]), "path": str(path.parent)},
            "site": {"css": CSS, "nav_top": nav(previous, following, "top"),
                     "nav_bottom": nav(previous, following, "bottom"),
                     "note": f'<div class="site-note">{html.escape(note)}</div>'},
        }
        body, _ = html_exporter.from_notebook_node(for_reading(nb), resources=resources)
        page = out / entries[i]["page"]
        page.write_text(link_pages(body), encoding="utf-8")
        written.append(page)

    index = out / "index.html"
    index.write_text(index_page(entries, note), encoding="utf-8")
    glossary = out / "glossary.html"
    glossary.write_text(glossary_page(note), encoding="utf-8")
    return [index, *written, glossary]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=SITE, help="output folder (default: site/)")
    parser.add_argument("--notebooks", type=Path, default=NOTEBOOKS, help="folder with NN_*.ipynb")
    args = parser.parse_args(argv)
    try:
        pages = build(args.out.resolve(), args.notebooks.resolve())
    except MathError as err:
        print(f"build_site: {err}", file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in pages) / 1e6
    print(f"wrote {len(pages)} pages ({size:.1f} MB) to {args.out.resolve()}/; open {pages[0].resolve()} in a browser "
          "(works from the file system, no server needed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
