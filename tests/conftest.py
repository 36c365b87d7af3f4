"""Shared fixtures: the standalone C tools compiled once per session, the pagelab command, and a
Python the unprivileged user can run."""

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import emulated
import kernels
from helpers import CFLAGS, MATRIX_TABLE, NOBODY, ROOT, checkout_state


def pytest_sessionstart(session):
    session.config.stash[CHECKOUT] = checkout_state()


def pytest_sessionfinish(session, exitstatus):
    """The suite leaves the checkout as it found it: a file it made, changed or deleted there
    (`git status --porcelain`) fails the run, named."""
    before, after = session.config.stash.get(CHECKOUT, None), checkout_state()
    if before is None or after is None or before == after:
        return
    changed = sorted(set(before.splitlines()) ^ set(after.splitlines()))
    session.config.get_terminal_writer().line(
        "the test run changed the checkout (git status --porcelain): " + "; ".join(changed),
        red=True,
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


CHECKOUT = pytest.StashKey[str | None]()


def pytest_terminal_summary(terminalreporter, config):
    """The matrices' tables, when they ran: the described machines
    (tests/machine/test_described_machines.py) and the real kernels
    (tests/system/test_kernels.py)."""
    table = config.stash.get(MATRIX_TABLE, None)
    if table:
        terminalreporter.write_sep("-", "described-machine matrix")
        terminalreporter.write(table)
    if kernels.RECORDED:
        terminalreporter.section("kernel matrix")
        terminalreporter.write_line(kernels.table())


def pytest_configure(config):
    # %%c cells compile into the user's cache directory: the suite's go to one of its own
    cache = tempfile.mkdtemp(prefix="pagelab-test-cache-")
    os.environ["XDG_CACHE_HOME"] = cache
    config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
    # A run started as a background job of a non-interactive shell inherits SIGINT ignored, and
    # Python then never installs its KeyboardInterrupt handler (nor do the children the tests
    # start). The interrupt tests need what a terminal's Ctrl-C gets: restore it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def tools_dir():
    """csrc/tools/*.c built as pl-<name> in a world-readable directory (unprivileged tests)."""
    d = Path(tempfile.mkdtemp(prefix="pagelab-tools-"))
    d.chmod(0o755)
    for src in sorted((ROOT / "csrc" / "tools").glob("*.c")):
        subprocess.run(["cc", *CFLAGS, "-o", str(d / f"pl-{src.stem}"), str(src)], check=True)
    yield d
    for f in d.iterdir():
        f.unlink()
    d.rmdir()


@pytest.fixture(scope="session")
def emulated_pmu():
    """The emulated PMU (tests/emupmu/emupmu.c) built once as a shared object; tests pass it
    with a described machine to pagelab in a child process (tests/emulated.py)."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) on PATH to build the emulated PMU")
    d = Path(tempfile.mkdtemp(prefix="pagelab-emupmu-"))
    yield emulated.build(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def pagelab_cmd():
    """The installed `pagelab` console script next to this interpreter."""
    return [str(Path(sys.executable).with_name("pagelab"))]


def _others_can_run(path):
    """Whether a user with no rights of its own can reach and run ``path``."""
    p = Path(path).resolve()
    if not p.is_file() or p.stat().st_mode & 0o005 != 0o005:
        return False
    return all(d.stat().st_mode & 0o001 for d in p.parents)


def _link_or_copy(src, dst):
    try:
        os.link(src, dst)  # instant on one filesystem; the files keep their (readable) modes
    except OSError:
        shutil.copy2(src, dst)


@pytest.fixture(scope="session")
def nobody_python():
    """(python, home) for uid nobody: a venv in a world-readable temporary directory, made from a
    world-runnable interpreter of this Python's version (this one's base when others can reach
    it; else the system's, e.g. Debian's /usr/bin/python3.11, since /root is private), holding
    links to this environment's packages and a copy of pagelab (the checkout may be private)."""
    if os.geteuid() != 0:
        pytest.skip("running as another user needs root; this test run is unprivileged")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    bases = [Path(sys.base_prefix) / "bin" / version]
    bases += [Path(d) / version for d in ("/usr/bin", "/usr/local/bin")]
    base = next((b for b in bases if _others_can_run(b)), None)
    if base is None:
        pytest.skip(
            f"no {version} that an unprivileged user can run ({', '.join(map(str, bases))}); "
            f"install the system's {version}"
        )
    d = Path(tempfile.mkdtemp(prefix="pagelab-nobody-"))
    d.chmod(0o755)
    venv = d / "venv"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    skip = shutil.ignore_patterns("__editable__*", "__pycache__")
    here = sysconfig.get_paths()["purelib"]
    shutil.copytree(here, site, dirs_exist_ok=True, copy_function=_link_or_copy, ignore=skip)
    src = d / "src"
    shutil.copytree(
        ROOT / "pylib" / "pagelab", src / "pagelab", copy_function=_link_or_copy, ignore=skip
    )
    # pagelab.source() reads the C next to the package, as in a checkout
    shutil.copytree(ROOT / "csrc", d / "csrc", copy_function=_link_or_copy, ignore=skip)
    Path(site, "pagelab-checkout.pth").write_text(f"{src}\n")
    home = d / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    yield python, home
    shutil.rmtree(d)
