"""A reading: one number and where it came from (hw, sw, rusage, sim, clock; or emulated, the
tests' emulated PMU, which never passes for hw).

Every layer makes them (counters, rusage, the simulator, the workloads' values) and every result
carries them, so the type lives here, on its own, below all of them.
"""

from dataclasses import dataclass

from .errors import BadInput

SOURCES = ("hw", "sw", "rusage", "sim", "clock", "emulated")


@dataclass
class Reading:
    """One number and where it came from. ``value`` is None when the source could not count it."""

    name: str
    value: float | int | None
    source: str
    unit: str = ""
    scaled: bool = False  # multiplexed: value * time_enabled / time_running
    kernel_excluded: bool = False  # opened with exclude_kernel=1: user-space events only
    reason: str | None = None  # why value is None
    fallback: "Reading | None" = None  # a labelled stand-in from another source
    parts: dict | None = None  # {core PMU: its share of value} where each core type counts apart
    note: str | None = None  # what else the number needs said (e.g. which cores it covers)

    def __post_init__(self):
        if self.source not in SOURCES:
            raise BadInput(f"unknown source {self.source!r}: one of {', '.join(SOURCES)}")

    @property
    def available(self):
        return self.value is not None

    def to_dict(self):
        d = {"value": self.value, "unit": self.unit, "source": self.source}
        if self.scaled:
            d["scaled"] = True
        if self.kernel_excluded:
            d["kernel_excluded"] = True
        if self.reason:
            d["reason"] = self.reason
        if self.fallback:
            d["fallback"] = self.fallback.to_dict()
            d["fallback_name"] = self.fallback.name
        if self.parts:
            d["parts"] = dict(self.parts)
        if self.note:
            d["note"] = self.note
        return d

    @classmethod
    def from_dict(cls, name, d):
        fb = d.get("fallback")
        return cls(
            name,
            d["value"],
            d["source"],
            d.get("unit", ""),
            d.get("scaled", False),
            d.get("kernel_excluded", False),
            d.get("reason"),
            cls.from_dict(d.get("fallback_name", "fallback"), fb) if fb else None,
            d.get("parts"),
            d.get("note"),
        )

    @property
    def best(self):
        """The value, else the labelled fallback's value, else None (see ``best_source``)."""
        if self.value is not None:
            return self.value
        return self.fallback.value if self.fallback else None

    @property
    def best_source(self):
        return self.source if self.value is not None or not self.fallback else self.fallback.source

    def __str__(self):
        if self.value is None:
            text = f"{self.name}: not available here ({self.reason})"
            return text + (f"; {self.fallback}" if self.fallback else "")
        value = f"{self.value:,.0f}" if self.unit == "" else f"{self.value:,.6g} {self.unit}"
        notes = (
            [self.source] + ["scaled"] * self.scaled + ["user-space only"] * self.kernel_excluded
        )
        if self.parts:
            notes.append(" + ".join(f"{pmu} {v:.3g}" for pmu, v in self.parts.items()))
        text = f"{self.name}: {value} ({', '.join(notes)})"
        return text + (f"; {self.note}" if self.note else "")
