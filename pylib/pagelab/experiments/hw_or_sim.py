"""Cache and TLB counts for claims: the PMU's where it counts them, else the simulator's.

The one place where an experiment meets the simulator (the adapter point):

- ``simulated(ctx)`` runs the -DPL_SIM build of the experiment's workload (the same C source,
  every PL_LOAD/PL_STORE fed to the cache/TLB model) when the run asked for it (``sim=True``,
  ``--sim``) and the build exists, as the module's ``simulation(params)`` asks: a simulator
  config ({} for the defaults, this machine's geometry from sysfs and CPUID; {"page": "2m"}
  where the workload uses huge pages) and parameter overrides. Declared like this, run_all can
  run the simulated builds before the native runs, side by side (experiments.runner). It
  returns the readings whose source is ``sim``, by label, or the sentence saying why there are
  none.
  The simulated run must label its regions like the native run and name its counts like perf's
  events (``L1-dcache-load-misses``, ``dTLB-load-misses``, ...); its clock and rusage readings
  time the simulator and are ignored.
- ``attach(measured, sim, names)`` hangs each simulated count on the measured reading of the same
  label and name as its labelled fallback, so ``best``/``best_source`` give hw where the PMU
  counted and sim elsewhere, and printing says "not available here (...); ... (sim)". Where the
  PMU did count, the simulated value is kept beside it as "<name> (sim)" for comparison.
- ``same_source(*readings)`` returns values that all come from one source (hw preferred, else
  sim), so a ratio never divides a hardware count by a simulated one; ``why_not`` says why not.
"""

from dataclasses import dataclass, field

from ..core.reading import Reading
from ..native.workloads import workload

PREFERENCE = ("hw", "sim")


@dataclass
class Simulated:
    """Simulated readings by label (label -> name -> Reading), or why there are none."""

    by_label: dict = field(default_factory=dict)
    reason: str | None = None

    def get(self, label, name):
        r = self.by_label.get(label, {}).get(name)
        return r if r is not None and r.value is not None else None


def simulated(ctx):
    """Run the simulated build of ctx's workload if this run asked for it and it exists."""
    if not ctx.sim:
        return Simulated(
            reason="this run had no simulated variant (run it with sim=True, or "
            "--sim, to have the simulator model it)"
        )
    if not workload(ctx.name).has_sim:
        return Simulated(
            reason=f"this run had no simulated variant ({ctx.name} has no simulated build yet)"
        )
    measured, _ = ctx.simulated()
    by_label = {
        m.label: {n: r for n, r in m.metrics.items() if r.source == "sim"} for m in measured
    }
    if not any(by_label.values()):
        return Simulated(reason="the simulated run returned no counts")
    return Simulated(by_label)


def attach(measured, sim, names):
    """Give every measured reading in ``names`` its simulated counterpart (see module doc)."""
    for m in measured:
        for name in names:
            s = sim.get(m.label, name)
            if s is None:
                continue
            r = m.metrics.get(name)
            if r is None:
                m.add(s)  # not counted natively at all: the simulated value stands, labelled sim
            elif r.value is None:
                r.fallback = s
            else:
                m.add(Reading(f"{name} (sim)", s.value, "sim", s.unit))


def _value(r, source):
    if r is None:
        return None
    if r.source == source and r.value is not None:
        return r.value
    fb = r.fallback
    return fb.value if fb is not None and fb.source == source else None


def same_source(*readings):
    """(values, source) with every value from the same source, hw preferred; None if none."""
    for source in PREFERENCE:
        values = [_value(r, source) for r in readings]
        if all(v is not None for v in values):
            return values, source
    return None


def why_not(sim, *readings):
    """Why ``readings`` cannot back a claim: the first missing one's reason and the sim's."""
    for r in readings:
        if r.best is None:
            return f"{r.name} is not available here ({r.reason}) and {sim.reason}"
    return (
        "no single source counted all of "
        + ", ".join(r.name for r in readings)
        + " (hardware and simulated counts are never mixed in one ratio)"
    )


def ratio(name, num, den, unit=""):
    """num / den from one source, as a Reading of that source, or unavailable with the reason."""
    got = same_source(num, den)
    if got is None:
        missing = num if num.best is None else den
        return Reading(
            name,
            None,
            missing.source,
            unit,
            reason=missing.reason or "no single source counted both",
        )
    (n, d), source = got
    if not d:
        return Reading(name, None, source, unit, reason=f"{den.name} counted 0 ({source})")
    return Reading(name, n / d, source, unit)
