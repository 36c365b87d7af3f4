"""The suite leaves the checkout as it found it (tests/conftest.py compares `git status` at the
start and the end of every run)."""

import pytest

from helpers import ROOT, checkout_state


def test_a_stray_file_in_the_checkout_is_seen():
    """The check that ends every test run (conftest.py) sees a file the suite would leave behind."""
    before = checkout_state()
    if before is None:
        pytest.skip("not a git checkout (or no git): the suite cannot compare its state")
    stray = ROOT / "pylib" / "stray-file-left-by-a-test.bin"
    try:
        stray.write_bytes(b"x")
        assert "stray-file-left-by-a-test.bin" in checkout_state()
    finally:
        stray.unlink()
    assert checkout_state() == before
