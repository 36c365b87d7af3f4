"""Every chapter has its sources file, docs/chapters/NN-name.md; each figure a chapter quotes
from a write-up is held there to the write-up's words, and each statement it makes about Linux or
the hardware to a primary source.

A sources file's table "Figures quoted from the write-up" has three columns: what the write-up
says (copied verbatim, so that a reader can find it in the write-up), what the chapter says (a
phrase found as it stands in the chapter's markdown or code), and the figures the chapter takes
from the write-up. A figure is either a number as the chapter writes it, which must also be a
number of the excerpt, or ``shown = expression``: the chapter's number, worked out from numbers
of the excerpt (``1eN`` and ``2**N`` are units) and rounded as the chapter rounds it.

Its table "Linux and hardware facts" marks the statements: what the chapter says (a phrase found
as it stands in the chapter), its primary sources (``;``-separated, each in one of the forms of
``SOURCE_FORMS``), and what was checked against them and what changed.
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
FACTS = "## Linux and hardware facts"
# The primary sources a fact may cite, backticks ignored: a kernel file (or Kconfig) and its
# function (or symbol), a commit with the first release that shipped it, a kernel
# Documentation/ file (and the entry in it), a man page with its section (and the part of it).
KERNEL_TOP = "arch|block|drivers|fs|include|init|ipc|kernel|lib|mm|net|security|virt"
SOURCE_FORMS = {
    "kernel file": re.compile(
        rf"(?:{KERNEL_TOP})/[\w./-]+(?:\.[chS]|Kconfig): \w+(?:\(\))?(?:, \w+(?:\(\))?)*"
    ),
    "commit": re.compile(
        r'commit [0-9a-f]{12,40} \(".+"\), first in v\d+(?:\.\d+){1,2}(?:-rc\d+)?'
    ),
    "Documentation": re.compile(r"Documentation/(?:ABI/[\w./-]+|[\w./-]+\.(?:rst|txt))(?:, .+)?"),
    "man page": re.compile(r"[\w.-]+\([1-8][a-z]*\)(?:, .+)?"),
}
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


def rows(doc, table=TABLE):
    """The rows of one of the file's three-column tables, its header left out, pipes unescaped."""
    text = doc.read_text()
    if table not in text:
        return []
    body = text.split(table, 1)[1].split("\n## ", 1)[0]
    found = []
    for line in body.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells[0].lower() in ("the write-up says", "the chapter says"):
            continue
        assert len(cells) == 3, f"{doc.name}: a row needs three cells: {line}"
        found.append(tuple(cells))
    return found


def check_fact(text, said, sources, checked):
    """What is wrong with one marked statement: its phrase, its sources, its record."""
    if flat(said) not in text:
        return [f"not in the chapter: {said!r}"]
    problems = []
    cited = [s.strip().replace("`", "") for s in sources.split(";") if s.strip()]
    if not cited:
        problems.append(f"{said!r}: no primary source")
    for source in cited:
        if not any(form.fullmatch(source) for form in SOURCE_FORMS.values()):
            problems.append(f"{said!r}: {source!r} is none of {', '.join(SOURCE_FORMS)}")
    if not checked.strip():
        problems.append(f"{said!r}: no record of what was checked")
    return problems


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


@pytest.mark.parametrize("doc", sorted(DOCS.glob("[0-9][0-9]-*.md")), ids=lambda p: p.name)
def test_linux_facts_cite_primary_sources(doc):
    """Each marked statement about Linux or the hardware is in the chapter and cites only primary
    sources of the accepted forms, with a record of what was checked."""
    assert FACTS in doc.read_text(), f"{doc.name} has no {FACTS!r} table"
    text = chapter_text(ROOT / "notebooks" / f"{doc.stem}.ipynb")
    problems = [p for row in rows(doc, FACTS) for p in check_fact(text, *row)]
    assert not problems, "\n".join(problems)


def test_the_fact_checks_can_fail(tmp_path):
    """The checks catch a marked statement with no source, a secondary source, and a commit
    without the release that shipped it; they accept each primary form."""
    doc = tmp_path / "99-synthetic.md"
    doc.write_text(
        f"# 99\n\n{FACTS}\n\n| the chapter says | source | checked, and what changed |\n"
        "|---|---|---|\n| fault-around serves read faults | | read it |\n"
        "| fault-around serves read faults | LWN, 2014 | read it |\n\n## Figures\n"
    )
    marked = rows(doc, FACTS)
    assert len(marked) == 2
    for row in marked:
        assert check_fact("Here fault-around serves read faults only.", *row)
    text = "Fault-around maps the neighbours of a read fault."
    said = "Fault-around maps the neighbours"
    good = [
        "`mm/memory.c`: `do_read_fault()`",
        'commit 625b7b7f79c6 ("x86/vsyscall: Change the default vsyscall mode"), first in v5.3',
        "`Documentation/admin-guide/mm/transhuge.rst`, sysfs",
        "`madvise(2)`, MADV_NOHUGEPAGE",
    ]
    for source in good:
        assert check_fact(text, said, source, "read the function") == []
    assert check_fact(text, said, "", "read the function")
    assert check_fact(text, said, "mm/memory.c: do_read_fault(); LWN, 2014", "read it")
    assert check_fact(text, said, 'commit 625b7b7f79c6 ("x86/vsyscall: ...")', "read it")
    assert check_fact(text, said, "mm/memory.c", "a file, no function")
    assert check_fact(text, said, "`madvise(2)`", "")
    assert check_fact(text, "maps every neighbour", "`madvise(2)`", "read it")


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
