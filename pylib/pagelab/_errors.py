"""The exceptions pagelab raises. Bad input is a ValueError with one clear line."""


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
