#!/usr/bin/env python3
"""Maintainer tool: general claims in learner prose that nothing backs.

    python tools/claims_lint.py [notebooks/NN_x.ipynb ...]     # every notebook if none is named

A sentence of a markdown cell (or of a code cell's printed text) that says *every*, *all*, *most*, *always*,
*never*, *none*, *no head*, *from layer N on*, or a direction (*faster*, *slower*, *larger*, *smaller*, *helps*,
*hurts*) makes a general claim. It passes if it is

- **registered**: a claim in ``tests/claims.py`` names its notebook, its cell id and a piece of the sentence, and a
  function that recomputes the evidence and asserts what the sentence says (``tests/test_claims.py`` runs them);
- **hedged** to what was run ("on these 12 prompts", "in this run", "on this machine"); or
- **not a claim**: a use of the word that states no finding (an instruction, a definition, a question, a negated or
  superlative phrase), listed in :data:`NOT_CLAIMS` with the reason, by pattern or by notebook and sentence.

Everything else is printed, one line per sentence, as ``notebook cell-id: word: sentence``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The words that make a sentence general: quantifiers and directions.
QUANTIFIERS = (r"every", r"all", r"most", r"always", r"never", r"none", r"no (?:head|layer|prompt|token|model)s?",
               r"in every layer", r"on every prompt", r"from layer \d+ on",
               r"about a (?:third|half|quarter|fifth|tenth)",
               r"close to zero", r"nearly all", r"almost (?:no|none|all|every|never)")
DIRECTIONS = (r"faster", r"slower", r"larger", r"smaller", r"helps?", r"hurts?", r"improves?")
CLAIM_WORD = re.compile(r"\b(" + "|".join(QUANTIFIERS + DIRECTIONS) + r")\b", re.IGNORECASE)

#: Phrases that say the strength of the run: "on these 12 prompts", "in this run", "on this machine".
HEDGE = re.compile(
    r"\b(?:on|in|over|of|for|across|from|with) (?:these|this|the|its|both|our|all) (?:\d+ |[\w,-]+ ){0,3}"
    r"(?:prompts?|runs?|seeds?|sentences?|sequences?|examples?|draws?|windows?|machine|computer|samples?|pairs?|"
    r"cases?|trials?|queries|steps|texts?|inputs?)\b"
    r"|\bin this (?:run|example|figure|table|case)\b|\bat the strength of\b|\bon this machine\b|\bhere\b",
    re.IGNORECASE)

#: Words for the parts of a computation: "every row", "every entry" state what the code does (a definition, or a
#: property its own cell checks), not a finding of a run. Heads, layers, prompts, seeds, runs and models are not here:
#: "every head" of a trained model is a finding.
COMPUTATION = (r"row|column|entry|entries|query|queries|key|keys|position|weight|number|pair|step|cell|word|component|"
               r"feature|element|value|score|matrix|block|parameter|angle|symbol|gradient|rule|power|float|type|token|"
               r"sub-layer|projection|array|allocation|part|curve|one|other|call|batch|slice|time|item|character|digit|"
               r"byte|merge|tensor|sequence|vector|distance|offset|length|dimension|product|term|shift|exponent|"
               r"helper|function|case|variant|copy|message|chat|answer|exercise|checker|notebook|section|figure|text|input|"
               r"sentence|mark|axis|bar|survivor|shape|tile|piece|string|key/value head|model's|head's|pair of")

#: Uses of a claim word that state no finding, by pattern (applied around the word), with the reason.
NOT_CLAIMS = {
    r"\brun all\b|\brestart & run all\b|\bas always\b": "an instruction or a set phrase",
    r"\ball-MiniLM": "a model's name",
    r"\bthe most\b|\bmost (?:likely|common|similar|frequent|recent|important|of its weight|of their weight)\b"
    r"|\bat most\b|\battends? (?:to )?most\b|\bmost weight\b": "a superlative or a bound, not 'most heads/prompts'",
    r"\ball (?:of )?(?:the|its|their|these|those|this|that|them|three|two|four|six|nine|twelve|\d+|X)\b|\bat all\b"
    r"|\ball at once\b|\ball together\b|\ball[- ]zeros?\b|\ball (?:weight|heads of a batch)\b|\bthey all\b"
    r"|\ball (?:in|equal|right)\b": "a collective of the objects the sentence names, not a generalisation over runs",
    rf"\bevery (?:\w+ )?(?:{COMPUTATION})s?\b|\bfor every\b|\bevery (?:kind|sub-layer)\b":
        "a definition or a property of the computation the cell runs (every row sums to 1), checked by its own "
        "code or a helper's test",
    r"\bnever (?:NaN|sees?|looks?|attends?|changes?|seen|used|saw|touch(?:es)?|built|overflows?|zero|"
    r"rescaled|mixes|fill|occurred|imported|downloaded)\b|\bnone of them\b|\bhas none\b|\badd none\b":
        "a guarantee of the code or of the data (a mask, a stable softmax, a held-out set), tested by the helpers' "
        "tests",
    r"\b(?:larger|smaller|faster|slower) (?:one|than (?:\w+ )?(?:d_model|X|one))\b|\bX (?:times )?(?:larger|smaller)\b"
    r"|\b\d+ times (?:larger|smaller|faster|slower)\b": "a comparison of sizes the sentence computes or prints",
}
NOT_CLAIM = re.compile("|".join(NOT_CLAIMS), re.IGNORECASE)
CODE = re.compile(r"```.*?```|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>]+>", re.DOTALL)
#: A printed line that makes a claim in words: no digit (a printed number is the run's own measurement) and no code
#: (a printed helper source).
VERBAL = re.compile(r"[^\d=()\[\]{}#]+")
CODE_LINE = re.compile(r"\s*(?:if|elif|else|for|while|def|class|return|r?\"\"\")\b|.*:\s*$")
#: Not a claim of the notebook: an answer option of a prediction, a citation or a title (the claim is the source's).
ATTRIBUTED = re.compile(r"^\(?[a-e]\)|et al\.|\(\d{4}\)|\b(?:19|20)\d\d\b|\*[A-Z][^*]+\*,"
                        r"|Attention (?:Is|is)(?: not)? [Aa]ll")
SENTENCE = re.compile(r"(?<=[.!?:;])\s+(?=[A-Z*(\"'])|\n\s*(?:[-*]|\d+\.)\s+|\n\n|\s*\|\s*")


def sentences(text):
    """The sentences of a markdown text, with code, maths and link targets blanked out."""
    text = CODE.sub(lambda m: " " * 0 + "X", text)
    return [" ".join(s.split()) for s in SENTENCE.split(text) if s.strip()]


def learner_prose(path):
    """``[(cell id, sentence)]``: every sentence of the markdown cells and of the printed text of code cells."""
    found = []
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            found += [(cell["id"], s) for s in sentences("".join(cell["source"]))]
        elif cell["cell_type"] == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stdout":
                    found += [(cell["id"], " ".join(line.split())) for line in "".join(output["text"]).splitlines()
                              if VERBAL.fullmatch(line.strip()) and not CODE_LINE.match(line)]
    return found


def doc_prose(number, root=ROOT):
    """``[(place, sentence)]`` of what the docs say about notebook ``number``: its answer key (``"answers"``) and its
    section of the teaching guide (``"guide"``)."""
    key = root / "docs" / "answers" / f"{number}.md"
    guide = (root / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    section = re.search(rf"^### {number} · .*?(?=^##)", guide, flags=re.MULTILINE | re.DOTALL)
    found = [("answers", s) for s in sentences(key.read_text(encoding="utf-8"))] if key.exists() else []
    return found + ([("guide", s) for s in sentences(section.group(0))] if section else [])


#: A quoted phrase ("a bigger dot product always means more similar"): a misconception or a wrong answer quoted to be
#: taken apart, not a claim of the text that quotes it.
QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")


def claim_words(sentence):
    """The claim words of a sentence that no not-a-claim pattern covers (short labels of fewer than 5 words, such
    as a table's wrong answers, state no claim)."""
    if len(sentence.split()) < 5:
        return []
    covered = [m.span() for m in NOT_CLAIM.finditer(sentence)] + [m.span() for m in QUOTED.finditer(sentence)]
    return [m.group(1) for m in CLAIM_WORD.finditer(sentence)
            if not any(a <= m.start() < b for a, b in covered)]


def unbacked(path, registered=(), allowed=()):
    """``[(cell id, word, sentence)]``: general sentences with no registered claim, no hedge, no listed reason.

    ``registered``: ``(cell id, fragment)`` pairs (the claims registry); ``allowed``: the same for sentences listed
    as not claims."""
    return _unbacked(learner_prose(path), registered, allowed)


def unbacked_docs(number, registered=(), allowed=()):
    """:func:`unbacked` for the answer key and the guide's section of notebook ``number``."""
    return _unbacked(doc_prose(number), registered, allowed)


def _unbacked(prose, registered, allowed):
    found = []
    for cell_id, sentence in prose:
        words = claim_words(sentence)
        if not words or HEDGE.search(sentence) or ATTRIBUTED.search(sentence) or sentence.rstrip().endswith("?"):
            continue
        if any(cell_id == c and _overlaps(fragment, sentence) for c, fragment in (*registered, *allowed)):
            continue
        found.append((cell_id, words[0], sentence))
    return found


def _overlaps(fragment, sentence):
    fragment, sentence = " ".join(CODE.sub("X", fragment).split()), " ".join(sentence.split())
    return fragment in sentence or sentence in fragment


def main(argv):
    sys.path.insert(0, str(ROOT / "tests"))
    from claims import allowed_fragments, registered_fragments

    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    count = 0
    for path in paths:
        number = path.name[:2]
        for cell_id, word, sentence in unbacked(path, registered_fragments(number), allowed_fragments(number)):
            print(f"{number} {cell_id}: {word}: {sentence}")
            count += 1
        for place, word, sentence in unbacked_docs(number, registered_fragments(number), allowed_fragments(number)):
            print(f"{number} {place}: {word}: {sentence}")
            count += 1
    print(f"{count} unbacked general sentences")
    return 1 if count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
