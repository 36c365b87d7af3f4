"""Reading the junit report of an nbval run (pytest --junitxml): per chapter, each cell's
outcome and the seconds its cells took. The chapter tests and `python -m bench` both use it."""

import xml.etree.ElementTree as ET


def nbval_outcomes(report):
    """{chapter: {cell: outcome}} and {chapter: seconds} from a junit report of an nbval run."""
    outcomes, seconds = {}, {}
    for case in ET.parse(report).getroot().iter("testcase"):
        chapter = case.get("classname", "").rsplit(".", 1)[0].split(".")[-1] + ".ipynb"
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes.setdefault(chapter, {})[case.get("name")] = kinds[0] if kinds else "passed"
        seconds[chapter] = seconds.get(chapter, 0.0) + float(case.get("time", 0))
    return outcomes, seconds
