"""The exceptions pagelab raises. Bad input is a ValueError with one clear line."""

import errno
import resource


class PagelabError(Exception):
    """Base class of pagelab's own errors."""

    def _render_traceback_(self):  # IPython shows this one line instead of a traceback
        return [f"{type(self).__name__}: {self}"]


class BadInput(PagelabError, ValueError):
    """The caller asked for something invalid; nothing was run. The CLI exits 2 with this line."""


class UnknownEvent(BadInput):
    """An event name that is neither a known perf event nor a raw rXXXX / TYPE:CONFIG spec."""


class BudgetExceeded(BadInput):
    """A request needs more memory than the lab's memory budget allows."""


class CounterUnavailable(PagelabError):
    """A counter could not be opened here; ``reason`` says why and ``fix`` what would help."""

    def __init__(self, event, reason, fix=None):
        super().__init__(f"{event}: not available here ({reason})")
        self.event = event
        self.reason = reason
        self.fix = fix


_RESOURCES = {
    errno.EMFILE: lambda: (
        "this process may open at most "
        f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]} files (raise it with `ulimit -n`)"
    ),
    errno.ENFILE: lambda: "the system's table of open files is full",
    errno.ENOMEM: lambda: "out of memory (or of address space: `ulimit -v`)",
}


def os_error_line(e):
    """One line for an OSError: what failed, on which file, and which resource ran out."""
    text = e.strerror or str(e) or type(e).__name__
    if e.filename is not None:
        text += f": {e.filename}"
    hint = _RESOURCES.get(e.errno)
    return f"{text}; {hint()}" if hint else text
