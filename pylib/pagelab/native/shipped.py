"""Where the files shipped with pagelab are: the chapters, the C sources and their headers.

A wheel carries them as package data beside this module (pagelab/native/chapters and
pagelab/native/csrc: the C sources, and the public headers once, in csrc/include; setup.py copies
them in). A source checkout (an editable install) has them at notebooks/ and csrc/ instead.
"""

from pathlib import Path

from ..core.errors import PagelabError

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parents[2]


def _find(what, packaged, checkout):
    for path in (_PACKAGE / packaged, _CHECKOUT / checkout):
        if path.is_dir():
            return path
    raise PagelabError(
        f"{what} missing: neither {_PACKAGE / packaged} nor {_CHECKOUT / checkout} exists; "
        "reinstall pagelab from a wheel or a full checkout"
    )


def chapters_dir():
    """The directory of the pristine chapters (never served directly: see cli/lab.py)."""
    return _find("the chapters are", "chapters", "notebooks")


def include_dir():
    """The directory holding pagelab's C headers, for compiling student C (-I)."""
    return _find("the C headers are", "csrc/include", "csrc/include")


def csrc_dir():
    """The directory of pagelab's C sources, which the chapters show (pagelab.source)."""
    return _find("the C sources are", "csrc", "csrc")
