"""The feedback pages of the nbgrader course (``nbgrader generate_feedback``): offline, named, accessible.

``classroom/nbgrader_config.py`` makes nbgrader write each learner's feedback with :class:`FeedbackExporter`
instead of its own HTML exporter, so that the page

- needs no network: equations are MathML, converted when the page is written (as on the site,
  tools/build_site.py), and no script is loaded (nbgrader's template loads MathJax from a CDN);
- names each test after its exercise in the summary at the top, e.g. "Exercise 03.1 (check_softmax_any_axis)",
  where nbgrader writes "Test cell": the name is the first line of the test cell that classroom_kit/classroom.py writes,
  a line nbgrader restores from its database when it grades, whatever the learner did to the cell;
- meets WCAG 2.1 AA (tests/browser/test_feedback_a11y.py): the page's language is set, code is highlighted
  in the site's style made for contrast (``CODE_STYLE``), links are underlined, and code and outputs wrap
  instead of scrolling sideways;
- runs nothing a student wrote (the notebook is a submission: nothing in it is trusted). Markdown is
  rendered with its raw HTML escaped (``<script>``, ``<img onerror>``, a ``<div>`` painting a fake score
  show as text); outputs keep only plain text and PNG/JPEG images (an HTML, JavaScript, SVG or markdown
  output is shown as its text); links and images keep only ``http(s)``/``mailto``/relative addresses and
  ``data:image`` pictures; what is left of the page's body loses every script, frame, embedded object, form
  and event handler (:func:`scrubbed`); and the page's Content-Security-Policy (:data:`POLICY`) lets no
  script, frame or request run even if something slipped through;
- writes emoji as words, as the slides do (tools/slides.py's ``without_emoji``): "Not yet", not a red cross.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import sys
from pathlib import Path

import nbformat

# The site's renderer and the slides' emoji-to-words: tools/ in the repository, siblings in a course's .grader/.
sys.path.append(str(Path(__file__).resolve().parents[1] / "tools"))
from build_site import CODE_STYLE, MarkdownWithMath, MathMLRenderer, SiteExporter  # noqa: E402, F401 - CODE_STYLE
from jinja2 import DictLoader, pass_context  # noqa: E402
from slides import without_emoji  # noqa: E402
from traitlets import default  # noqa: E402

TITLE = re.compile(r"^# (.+?): autograder test")

CSS = """
body { font-size: 16px; padding-top: 1em; overflow: visible; }
div#notebook { overflow: visible; border-top: none; }
div#notebook-container { width: 100%; }
div.nbgrader_cell { width: 100%; }
div.nbgrader_cell .panel-heading { padding: 0.4em 0.6em; }
div.nbgrader_cell .panel-body { padding: 0.4em; }
div.nbgrader_cell .input_area { background: white; border: none; }
li.late-penalty { color: #a8201a; }
a, a:any-link { color: #0b5394; text-decoration: underline; }
#toc li { margin: 0.2em 0; }
div.prompt { min-width: 12ex; }
div.input_prompt { color: #1a237e; }
div.output_prompt { color: #8b0000; }
pre, div.output_area pre, div.input_area pre { white-space: pre-wrap; overflow-wrap: anywhere; overflow: visible; }
div.output_subarea, div.output_area, div.output_wrapper, div.output { overflow: visible; max-width: 100%; }
div.output_stderr { background: #fdecea; }
div.nbgrader_cell .panel-heading a { color: inherit; }  /* the heading's own colour on its own background */
.site-equation { margin: 0.6em 0; max-width: 100%; overflow-x: auto; }
.site-equation:focus-visible { outline: 2px solid #0b5394; outline-offset: 2px; }
math[display="block"] { display: block; font-size: 1.1em; }
td.center, th.center { text-align: center; }
"""

#: The page's Content-Security-Policy: no script, frame, object, font or request; pictures only from the page
#: itself (``data:``), styles only its own inline ones; no form goes anywhere, no <base> moves the links.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'"

# nbgrader's feedback page (feedback/index.html.j2) with its head replaced: no MathJax, a language, our styles.
TEMPLATE = ("""{%- extends 'index.html.j2' -%}
{%- block header -%}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="@POLICY@">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Feedback: {{ resources.nbgrader.notebook }}</title>
{{ resources.include_css('bootstrap.min.css') }}
{% for css in resources.inlining.css -%}
<style type="text/css">{{ css }}</style>
{% endfor %}
<style type="text/css">""" + CSS + """</style>
</head>
{%- endblock header -%}
""").replace("@POLICY@", POLICY)


#: What the marks were decided on, said at the top of every page (classroom_kit/grade.py).
GRADED = ("What was graded: each exercise cell, run on its own in a sandbox after the notebook's own cells it "
          "needs, together with the cells of your own above it that define what it uses (a helper function); "
          "your function is checked on the notebook's cases and on new ones.")


def test_name(source: str) -> str | None:
    """The name a test cell gives itself on its first line, e.g. "Exercise 03.1 (check_softmax_any_axis)".

    >>> test_name("# Exercise 03.1 (check_softmax_any_axis): autograder test (1 point)\\nassert True")
    'Exercise 03.1 (check_softmax_any_axis)'
    """
    found = TITLE.match(source)
    return found.group(1) if found else None


class FeedbackExporter(SiteExporter):
    """nbgrader's feedback page, offline (equations as MathML, no script), each test named, WCAG 2.1 AA."""

    @default("extra_loaders")
    def _extra_loaders_default(self):
        return [DictLoader({"feedback_offline.html.j2": TEMPLATE})]

    @default("template_file")
    def _template_file_default(self):
        return "feedback_offline.html.j2"

    @pass_context
    def markdown2html(self, context, source):
        """A markdown cell as HTML, its raw HTML escaped (a student's ``<script>`` is text), equations MathML."""
        cell = context.get("cell", {})
        renderer = MathMLRenderer(escape=True, attachments=cell.get("attachments", {}),
                                  embed_images=self.embed_images, anchor_link_text=self.anchor_link_text,
                                  exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
        try:
            return MarkdownWithMath(renderer=renderer).render(source)
        except Exception:  # noqa: BLE001 - markdown the renderer cannot take: its text, escaped
            return f"<pre>{html.escape(str(source))}</pre>"

    def from_notebook_node(self, nb, resources=None, **kw):
        nb = safe_notebook(nb)
        page, resources = super().from_notebook_node(nb, resources, **kw)
        page = without_emoji(scrubbed(page)).replace("</h4>", f"</h4>\n<p>{GRADED}</p>", 1)
        for cell in nb.cells:
            grading = cell.metadata.get("nbgrader", {})
            name = test_name(cell.source) if grading.get("grade") and not grading.get("solution") else None
            if name:  # in the summary at the top, and in the cell's heading
                link, grade_id = f'<a href="#{grading["grade_id"]}">', grading["grade_id"]
                page = page.replace(f"{link}Test cell</a>", f"{link}{html.escape(name)}</a>")
                page = page.replace(f"Grade cell: <code>{grade_id}</code>", html.escape(name))
        return page, resources



# --------------------------------------------------------------------------- what a student wrote, made inert

#: The outputs a feedback page shows as they are: text (escaped by the page's template) and pictures.
SAFE_OUTPUTS = ("text/plain", "image/png", "image/jpeg")
CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


def safe_notebook(nb):
    """A copy of the submitted ``nb`` whose cells and outputs cannot carry markup into the page: raw cells
    become code blocks of text, outputs keep only :data:`SAFE_OUTPUTS` (any other is shown as its text),
    pictures are checked base64, attachments keep only pictures, cell ids are ids."""
    nb = nbformat.from_dict(nb)
    for k, cell in enumerate(nb.cells):
        if not CELL_ID.fullmatch(str(cell.get("id", ""))):
            cell["id"] = f"cell-{k}"
        grading = cell.get("metadata", {}).get("nbgrader")
        if grading is not None and not (isinstance(grading, dict)
                                        and CELL_ID.fullmatch(str(grading.get("grade_id", "")))):
            cell.metadata.pop("nbgrader")  # a grade id the page would write into a link: not one nbgrader gave
        if cell.cell_type not in ("markdown", "code"):  # a raw cell (text/html, say): its text, as code
            cell.cell_type, cell.metadata = "markdown", {}
            cell.source = "\n".join("    " + line for line in str(cell.get("source", "")).splitlines())
            cell.pop("attachments", None)
        if cell.cell_type == "markdown":
            attachments = cell.get("attachments") if isinstance(cell.get("attachments"), dict) else {}
            cell["attachments"] = {name: kept for name, bundle in attachments.items() if isinstance(bundle, dict)
                                   and (kept := {mime: data for mime, data in bundle.items()
                                                 if mime in SAFE_OUTPUTS[1:] and _picture(data)})}
            if not cell["attachments"]:
                cell.pop("attachments")
        if cell.cell_type == "code":
            cell.outputs = [inert for output in cell.get("outputs", []) if (inert := _inert(output)) is not None]
    return nb


def _picture(data) -> bool:
    if not isinstance(data, str) or not BASE64.fullmatch(data):
        return False
    try:
        base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return False
    return True


def _inert(output):
    """``output`` as the page may show it, or ``None`` (a kind of output the page does not show)."""
    kind = output.get("output_type")
    if kind == "stream":
        return nbformat.v4.new_output("stream", name="stderr" if output.get("name") == "stderr" else "stdout",
                                      text=_text(output.get("text", "")))
    if kind == "error":
        return nbformat.v4.new_output("error", ename=_text(output.get("ename", "")), evalue=_text(output.get(
            "evalue", "")), traceback=[_text(line) for line in output.get("traceback", []) or []])
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data", {}) if isinstance(output.get("data"), dict) else {}
    kept = {mime: _text(value) for mime, value in data.items() if mime == "text/plain"}
    kept.update({mime: value for mime, value in data.items() if mime in SAFE_OUTPUTS[1:] and _picture(value)})
    others = [mime for mime in data if mime not in kept]
    if "text/plain" not in kept and others:  # an HTML or script output with no text of its own: its source
        kept["text/plain"] = f"(an output of type {others[0]}, shown as text)\n" + _text(data[others[0]])
    alt = ((output.get("metadata") or {}).get("image/png") or {}).get("alt") \
        if isinstance(output.get("metadata"), dict) else None
    metadata = {"image/png": {"alt": alt}} if isinstance(alt, str) and "image/png" in kept else {}
    return nbformat.v4.new_output("display_data", data=kept, metadata=metadata) if kept else None


def _text(value) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


#: Elements that never belong in a feedback page's body, and the attributes that hold an address.
DROPPED = {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "form", "input",
           "button", "textarea", "select", "meta", "link", "style", "svg", "template", "portal", "noscript"}
ADDRESSES = {"href", "src", "action", "formaction", "xlink:href", "background", "poster", "data", "srcset",
             "ping", "cite", "longdesc", "usemap", "manifest", "codebase", "dynsrc", "lowsrc"}
SAFE_ADDRESS = re.compile(r"(https?://|mailto:|#|[^:/?#]*($|[/?#]))", re.IGNORECASE)
PICTURE = re.compile(r"data:image/(png|jpeg|gif|webp);base64,", re.IGNORECASE)


def scrubbed(page: str) -> str:
    """``page`` whose body keeps no element of :data:`DROPPED`, no event handler (``on...``), ``srcdoc`` or
    ``style`` attribute, and no address but ``http(s)``, ``mailto``, a relative one or a ``data:image``
    picture in an ``<img>`` (the last of three guards: the markdown and outputs are made inert first)."""
    from bs4 import BeautifulSoup

    start = page.find("<body")
    if start < 0:
        return page
    soup = BeautifulSoup(page[start:], "html.parser")
    for element in soup.find_all(DROPPED):
        element.decompose()
    for element in soup.find_all(True):
        for name in list(element.attrs):
            value = "".join(ch for ch in str(element.attrs[name]) if ch > " ").lower()
            lowered = name.lower()
            if lowered.startswith("on") or lowered in ("srcdoc", "style", "formaction"):
                del element.attrs[name]
            elif lowered in ADDRESSES and not (SAFE_ADDRESS.match(value) or (
                    element.name == "img" and lowered == "src" and PICTURE.match(value))):
                del element.attrs[name]
    return page[:start] + str(soup)
