"""What an experiment returns: labelled measurements of labelled readings, and claims."""

from dataclasses import dataclass, field

from .._version import __version__
from ..core.errors import PagelabError
from ..core.reading import Reading


@dataclass
class Claim:
    """A claim checked on the fresh measurement. ``holds`` is None when it could not be
    evaluated here; ``reason`` then says why (it never counts as holding)."""

    id: str
    text: str
    holds: bool | None
    evidence: str = ""
    reason: str | None = None

    @property
    def verdict(self):
        """Deterministic text for notebooks: no machine-dependent numbers."""
        word = {True: "holds", False: "fails", None: "not evaluated"}[self.holds]
        return f"{word}: {self.text}"

    def to_dict(self):
        d = {"id": self.id, "text": self.text, "holds": self.holds, "evidence": self.evidence}
        if self.reason:
            d["reason"] = self.reason
        return d

    def __str__(self):
        detail = self.evidence if self.holds is not None else self.reason
        return f"{self.verdict} ({detail})" if detail else self.verdict


@dataclass
class Measured:
    """One labelled measurement (a variant, a size, a thread count...) and its readings."""

    label: str
    metrics: dict = field(default_factory=dict)  # name -> Reading

    def __getitem__(self, name):
        return self.metrics[name]

    def add(self, reading):
        self.metrics[reading.name] = reading
        return reading


@dataclass
class Result:
    experiment: str
    params: dict
    environment: dict
    measurements: list
    claims: list
    notes: list = field(default_factory=list)
    text: str = ""  # free text a workload returned, e.g. a memory map
    summary: tuple = ()  # metric names worth showing in the text summary
    _figure: object = None
    not_run: str | None = None  # why the experiment did not run here (run all goes on)

    def __getitem__(self, label):
        return self._find(self.measurements, "label", label, "measurement")

    def labels(self, prefix=""):
        return [m.label for m in self.measurements if m.label.startswith(prefix)]

    def claim(self, claim_id):
        return self._find(self.claims, "id", claim_id, "claim")

    def _find(self, items, key, value, what):
        for item in items:
            if getattr(item, key) == value:
                return item
        have = ", ".join(getattr(i, key) for i in items)
        raise KeyError(f"{self.experiment} has no {what} {value!r} (have: {have})")

    def verdicts(self, *ids):
        """One deterministic line per claim (or per claim named), for the checked cells of the
        chapters."""
        return "\n".join(c.verdict for c in (map(self.claim, ids) if ids else self.claims))

    def figure(self):
        """A plotly figure of this result."""
        if self._figure is None:
            raise PagelabError(f"{self.experiment} has no figure")
        from .plots import displayable

        return displayable(self._figure(self))

    def to_dict(self):
        return {
            "experiment": self.experiment,
            "version": __version__,
            "params": self.params,
            "environment": self.environment,
            "measurements": [
                {"label": m.label, "metrics": {n: r.to_dict() for n, r in m.metrics.items()}}
                for m in self.measurements
            ],
            "claims": [c.to_dict() for c in self.claims],
            "notes": self.notes,
            **({"not_run": self.not_run} if self.not_run else {}),
        }

    def __str__(self):
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        lines = [f"{self.experiment} ({params}) on a {self.environment.get('profile')} machine"]
        if self.not_run:
            return "\n".join(lines + [f"  not run: {self.not_run}"])
        names = self.summary or ()
        for m in self.measurements:
            shown = [_short(m.metrics[n]) for n in names if n in m.metrics]
            if shown:
                lines.append(f"  {m.label:<24} " + "  ".join(shown))
        lines += [f"  note: {n}" for n in self.notes]
        lines += ["claims:"] + [f"  {c}" for c in self.claims]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _short(r: Reading):
    if r.value is None:
        if r.fallback is not None:
            return f"{r.name}={_num(r.fallback.value)} ({r.fallback.source}, {r.source} n/a)"
        return f"{r.name}=n/a"
    unit = f" {r.unit}" if r.unit else ""
    return f"{r.name}={_num(r.value)}{unit} ({r.source})"


def _num(v):
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.4g}"
    return f"{int(v):,}"
