"""The docs site (`make docs`): docs/ and the chapters, rendered from their stored outputs (never
executed here: the chapters run under nbval in `make test`). Built from the repository root so the
chapters stay where they are; tests/project/test_docs.py builds it with warnings as errors."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

project = "pagelab"
version = release = json.loads((ROOT / "labext" / "package.json").read_text())["version"]
root_doc = "docs/index"
extensions = ["myst_nb"]
include_patterns = ["docs/*.md", "docs/*/*.md", "notebooks/*.ipynb"]
exclude_patterns = ["docs/chapters/README.md"]
nb_execution_mode = "off"  # the stored outputs, as nbval compares them
# A figure's output holds the plotly JSON and pagelab's themed figure (for a live JupyterLab)
# beside the static HTML the site shows; myst-nb names each skipped type, so that warning is
# off. `%%writefile` cells are IPython, not Python, so Pygments cannot lex them: they show plain.
suppress_warnings = ["mystnb.unknown_mime_type", "misc.highlighting_failure"]
myst_heading_anchors = 3
html_theme = "sphinx_book_theme"
html_title = "pagelab"
# Each chapter page gets a Binder button that opens it in JupyterLab.
html_theme_options = {
    "repository_url": "https://github.com/pagelab/pagelab",
    "repository_branch": "main",
    "path_to_docs": "",  # the site is built from the repository root
    "use_repository_button": True,
    "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
}
