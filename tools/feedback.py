"""The feedback pages of the nbgrader course (``nbgrader generate_feedback``): offline, named, accessible.

``classroom/nbgrader_config.py`` makes nbgrader write each learner's feedback with :class:`FeedbackExporter`
instead of its own HTML exporter, so that the page

- needs no network: equations are MathML, converted when the page is written (as on the site,
  tools/build_site.py), and no script is loaded (nbgrader's template loads MathJax from a CDN);
- names each test after its exercise in the summary at the top, e.g. "Exercise 03.1 (check_softmax_any_axis)",
  where nbgrader writes "Test cell": the name is the first line of the test cell that tools/classroom.py writes,
  a line nbgrader restores from its database when it grades, whatever the learner did to the cell;
- meets WCAG 2.1 AA (tests/browser/test_feedback_a11y.py): the page's language is set, code is highlighted
  in the site's style made for contrast (``CODE_STYLE``), links are underlined, and code and outputs wrap
  instead of scrolling sideways.
"""

from __future__ import annotations

import html
import re

from build_site import CODE_STYLE, SiteExporter  # noqa: F401 - CODE_STYLE: for nbgrader_config.py
from jinja2 import DictLoader
from traitlets import default

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

# nbgrader's feedback page (feedback/index.html.j2) with its head replaced: no MathJax, a language, our styles.
TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block header -%}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Feedback: {{ resources.nbgrader.notebook }}</title>
{{ resources.include_css('bootstrap.min.css') }}
{% for css in resources.inlining.css -%}
<style type="text/css">{{ css }}</style>
{% endfor %}
<style type="text/css">""" + CSS + """</style>
</head>
{%- endblock header -%}
"""


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

    def from_notebook_node(self, nb, resources=None, **kw):
        page, resources = super().from_notebook_node(nb, resources, **kw)
        for cell in nb.cells:
            grading = cell.metadata.get("nbgrader", {})
            name = test_name(cell.source) if grading.get("grade") and not grading.get("solution") else None
            if name:  # in the summary at the top, and in the cell's heading
                link, grade_id = f'<a href="#{grading["grade_id"]}">', grading["grade_id"]
                page = page.replace(f"{link}Test cell</a>", f"{link}{html.escape(name)}</a>")
                page = page.replace(f"Grade cell: <code>{grade_id}</code>", html.escape(name))
        return page, resources

