"""Every chapter's "Read next" names the write-up its story comes from, by title, and links the
chapters it points to (files that exist); the index gives each chapter the minutes its header
gives."""

import json
import re

import pytest

from helpers import ROOT

COURSE = "Linux Program Measurement and mmap"
WRITE_UPS = {  # chapter number -> the title of the write-up its story retells (or, for the
    # ebizzy analysis, which gives itself none, how the chapter names it)
    "01": COURSE,
    "02": COURSE,
    "03": COURSE,
    "04": "Why Are My Page_faults So High in Perf?",
    "05": "A queue of page faults",
    "06": COURSE,
    "07": COURSE,
    "08": "Digging out the craziest bug you never heard about from 2008",
    "09": "The ebizzy analysis",
    "10": COURSE,
    "11": COURSE,
    "12": COURSE,
    "13": COURSE,
    "14": COURSE,
}
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def markdown(path):
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def read_next(path):
    text = markdown(path)
    assert "## Read next" in text, f"{path.name} has no Read next"
    return text.split("## Read next", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_read_next_names_the_write_up_and_links_chapters(path):
    """The write-up behind the story is named in Read next; each chapter named there is a link
    to a chapter file that exists."""
    section = read_next(path)
    title = WRITE_UPS.get(path.name[:2])
    if title:
        assert title.lower() in section.lower(), f"{path.name}: Read next does not name {title!r}"
    for m in re.finditer(r"(\[?)[Cc]hapters? (\d\d)", section):
        if not m.group(1):
            before = section[: m.start()]
            assert before.count("[") > before.count("]"), f"{path.name}: {m.group(0)} is no link"
    for target in re.findall(r"\]\(([^)]+\.ipynb)\)", section):
        assert (path.parent / target).exists(), f"{path.name}: {target} does not exist"


def test_every_chapter_with_a_story_is_mapped():
    """No chapter from 01 to 14 is missing from the map of write-ups."""
    assert {p.name[:2] for p in CHAPTERS if "01" <= p.name[:2] <= "14"} == set(WRITE_UPS)


def test_the_index_gives_each_chapters_own_minutes():
    """Chapter 16's table lists every other chapter with the minutes its "What you need" says."""
    index = markdown(ROOT / "notebooks" / "16-browse-the-chapters.ipynb")
    listed = dict(re.findall(r"^\| \[[^\]]+\]\(([^)]+\.ipynb)\) \|.*\| (\d+) \|$", index, re.M))
    for path in CHAPTERS[:-1]:
        need = re.search(r"\*\*What you need:\*\*.*?(\d+) minutes", markdown(path), re.S)
        assert need, f"{path.name} does not say how long it takes"
        assert listed.get(path.name) == need.group(1), path.name
