"""Strip what executing a chapter leaves that is no part of it: nbclient's per-cell timing
(``metadata.execution``) and the saved state of widget models no shown widget uses (the
progress bars a run closes: ipywidgets marks a closed view's layout ``visibility: hidden``).
And write the chapter's provenance line: one markdown cell after the title, made from the facts
.ci/record_chapters.py stored in ``metadata.pagelab.recorded`` when it recorded the outputs.

Otherwise cells, their order, sources and outputs are kept as they are. The file is written the
way Jupyter writes it (indent 1, keys sorted, UTF-8, final newline).

Usage: python .ci/normalize_notebooks.py [--check] NOTEBOOK ...  (`make notebooks` runs it on
notebooks/; --check changes nothing and exits 1 naming each notebook it would change).
"""

import json
import re
import sys
from pathlib import Path

STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"
REFERENCE = re.compile(r"IPY_MODEL_(\w+)")
# The one form of a provenance line (tests/chapters/test_provenance.py holds every chapter to it)
PROVENANCE = re.compile(
    r"\*\*Outputs recorded\*\* on kernel (?P<kernel>\S+); "
    r"profile (?P<profile>full|software-only|blocked); machine (?P<machine>[^;]+); "
    r"(?P<date>\d{4}-\d\d-\d\d)\."
)


def provenance_line(recorded):
    """The provenance line of a recording's facts: kernel, profile, machine and date."""
    return (
        f"**Outputs recorded** on kernel {recorded['kernel']}; profile {recorded['profile']};"
        f" machine {recorded['machine']}; {recorded['date']}."
    )


def _provenance(nb):
    """The cells with the provenance line in its place: one cell after the title where the
    chapter was recorded, none where it was not."""
    cells = [c for c in nb["cells"] if c.get("id") != "provenance"]
    recorded = nb["metadata"].get("pagelab", {}).get("recorded")
    if recorded:
        line = {"cell_type": "markdown", "id": "provenance", "metadata": {}}
        cells.insert(1, {**line, "source": [provenance_line(recorded)]})
    return cells


def _hidden(models, model_id):
    layout = REFERENCE.search(str(models[model_id]["state"].get("layout", "")))
    return bool(layout) and models.get(layout[1], {}).get("state", {}).get("visibility") == (
        "hidden"
    )


def _used(nb, models):
    """The ids of the models that a shown (not closed) widget reaches, through its state's
    references."""
    shown = [
        output["data"][VIEW]["model_id"]
        for cell in nb["cells"]
        for output in cell.get("outputs", [])
        if VIEW in output.get("data", {})
    ]
    todo = [m for m in shown if m in models and not _hidden(models, m)]
    used = set()
    while todo:
        model_id = todo.pop()
        if model_id in used or model_id not in models:
            continue
        used.add(model_id)
        todo += REFERENCE.findall(json.dumps(models[model_id]["state"]))
    return used


def normalize(nb):
    """The notebook without timing metadata and without unused widget state, with its provenance
    line (a new dict)."""
    nb = json.loads(json.dumps(nb))
    nb["cells"] = _provenance(nb)
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("execution", None)
    widgets = nb["metadata"].get("widgets", {})
    if STATE in widgets:
        models = widgets[STATE]["state"]
        used = _used(nb, models)
        widgets[STATE]["state"] = {k: v for k, v in models.items() if k in used}
        if not used:
            del nb["metadata"]["widgets"]
    return nb


def text(nb):
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv):
    check = "--check" in argv
    changed = []
    for path in map(Path, (a for a in argv if a != "--check")):
        before = path.read_text(encoding="utf-8")
        after = text(normalize(json.loads(before)))
        if after != before:
            changed.append(path)
            if not check:
                path.write_text(after, encoding="utf-8")
    for path in changed:
        print(f"{'not normalized' if check else 'normalized'}: {path}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
