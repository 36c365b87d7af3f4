"""`pagelab lab` / `make lab`: JupyterLab opened on the chapters."""

import os
import shutil
import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2] / "notebooks"
_SHIPPED = Path(sys.prefix) / "share" / "pagelab" / "notebooks"


def notebooks_dir():
    """The chapters: the checkout's notebooks/ when running from a clone, else a working copy of
    the chapters shipped in the wheel (copied once, so students' edits are never overwritten)."""
    if _CHECKOUT.is_dir():
        return _CHECKOUT
    work = Path.cwd() / "pagelab-notebooks"
    if not work.exists() and _SHIPPED.is_dir():
        shutil.copytree(_SHIPPED, work)
    return work


def lab_command(extra_args):
    """The argv that starts JupyterLab on the chapters with this interpreter's Jupyter."""
    jupyter = Path(sys.executable).with_name("jupyter")
    argv = [str(jupyter), "lab", f"--ServerApp.root_dir={notebooks_dir()}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")  # lab VMs and containers often run as root
    return argv + list(extra_args)
