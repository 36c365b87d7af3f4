"""All C in csrc/ compiles warning-free with the project's flags."""

import subprocess

from helpers import CFLAGS, ROOT


def test_csrc_is_warning_free():
    """Every csrc/**/*.c passes -Wall -Wextra -Wshadow -Wmissing-prototypes -Werror."""
    sources = sorted(str(p) for p in (ROOT / "csrc").rglob("*.c"))
    assert sources
    for src in sources:
        p = subprocess.run(["cc", *CFLAGS, "-fsyntax-only", f"-I{ROOT / 'csrc' / 'include'}", src],
                           capture_output=True, text=True)
        assert p.returncode == 0, f"{src}:\n{p.stderr}"
