"""Every chapter has its sources file, docs/chapters/NN-name.md, and each figure a chapter quotes
from a write-up is held there to the write-up's words.

A sources file's table "Figures quoted from the write-up" has three columns: what the write-up
says (copied verbatim, so that a reader can find it in the write-up), what the chapter says (a
phrase found as it stands in the chapter's markdown or code), and the figures the chapter takes
from the write-up. A figure is either a number as the chapter writes it, which must also be a
number of the excerpt, or ``shown = expression``: the chapter's number, worked out from numbers
of the excerpt (``1eN`` and ``2**N`` are units) and rounded as the chapter rounds it.
"""

import ast
import json
import operator
import re

import pytest

from helpers import ROOT

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
DOCS = ROOT / "docs" / "chapters"
TABLE = "## Figures quoted from the write-up"
# 1,010,665,367 or 6.415 or 20: a thousands comma only between groups of three digits
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
UNIT = re.compile(r"\b1e-?\d+\b|\b\d+\s*\*\*\s*\d+")


def value(text):
    return float(text.replace(",", ""))


def numbers(text):
    return {value(n) for n in NUMBER.findall(text)}


def flat(text):
    return " ".join(text.split())


def chapter_text(nb):
    """The chapter's markdown and code (not its outputs), whitespace collapsed."""
    cells = json.loads(nb.read_text())["cells"]
    return flat("\n".join("".join(c["source"]) for c in cells))


def rows(doc):
    """The rows of the quoted-figures table: (write-up, chapter, figures), pipes unescaped."""
    text = doc.read_text()
    if TABLE not in text:
        return []
    body = text.split(TABLE, 1)[1].split("\n## ", 1)[0]
    found = []
    for line in body.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells[0].lower() == "the write-up says":
            continue
        assert len(cells) == 3, f"{doc.name}: a row needs three cells: {line}"
        found.append(tuple(cells))
    return found


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def evaluate(expression):
    """An arithmetic expression of numbers, + - * / ** and parentheses, and nothing else."""

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"not plain arithmetic: {expression!r}")

    return walk(ast.parse(expression, mode="eval"))


def rounds_to(exact, shown):
    """Whether ``exact`` is ``shown`` as the chapter rounds it (to its last digit)."""
    digits = len(shown.split(".")[1]) if "." in shown else 0
    return abs(exact - value(shown)) <= 0.5 * 10**-digits + 1e-9


def check_figure(excerpt, said, figure):
    """None, or what is wrong with one figure of a row."""
    shown, _, expression = (part.strip() for part in figure.partition("="))
    if shown not in said:
        return f"{shown} is not in the chapter's phrase"
    if not expression:
        return None if value(shown) in numbers(excerpt) else f"{shown} is not in the excerpt"
    missing = numbers(UNIT.sub(" ", expression)) - numbers(excerpt)
    if missing:
        return f"{expression} uses numbers the excerpt lacks: {sorted(missing)}"
    exact = evaluate(expression.replace(",", ""))
    return None if rounds_to(exact, shown) else f"{expression} = {exact:g}, not {shown}"


def test_every_chapter_has_its_sources_file():
    """docs/chapters holds one sources file per chapter, named like it, and no stray ones."""
    have = {p.stem for p in DOCS.glob("[0-9][0-9]-*.md")}
    want = {nb.stem for nb in CHAPTERS}
    assert want - have == set(), f"chapters without a sources file: {sorted(want - have)}"
    assert have - want == set(), f"sources files without a chapter: {sorted(have - want)}"


@pytest.mark.parametrize("doc", sorted(DOCS.glob("[0-9][0-9]-*.md")), ids=lambda p: p.name)
def test_quoted_figures_match_the_write_ups(doc):
    """Each quoted figure is in the chapter's phrase, the phrase is in the chapter, and the figure
    is the excerpt's number (or worked out from the excerpt's numbers, as the chapter rounds)."""
    nb = ROOT / "notebooks" / f"{doc.stem}.ipynb"
    if not nb.exists():
        pytest.fail(f"{doc.name} names no chapter")
    text = chapter_text(nb)
    problems = []
    for excerpt, said, figures in rows(doc):
        if flat(said) not in text:
            problems.append(f"not in the chapter: {said!r}")
            continue
        for figure in filter(None, (f.strip() for f in figures.split(";"))):
            wrong = check_figure(flat(excerpt), flat(said), figure)
            if wrong:
                problems.append(f"{said!r}: {wrong}")
    assert not problems, "\n".join(problems)


def test_the_figure_checks_can_fail():
    """The checks catch a figure that is not the write-up's: the 0.67 s that chapter 06 once gave
    for a user time whose whole seconds (Usec) the write-up puts at 20."""
    excerpt = "Usec/std dev 20/0 20/0 usec/std dev 801512/ 78346 671957/ 229314"
    assert check_figure(excerpt, "about 20.7 s", "20.7 = 20 + 671957 / 1e6") is None
    assert check_figure(excerpt, "0.67 s", "0.67") is not None
    assert check_figure(excerpt, "about 20.7 s", "20.8 = 20 + 801512 / 1e6") is not None
    assert check_figure("156X faster", "156x", "156") is None
    with pytest.raises(ValueError):
        evaluate("__import__('os')")
