"""What a %%c cell did, as the notebook and `pagelab sim c` show it."""

from dataclasses import dataclass, field

from ..sim.lines import LineView

# the rusage fields worth a row beside the counters (the others stay in CellResult.measured)
RUSAGE_SHOWN = ("utime", "minflt", "maxrss")


@dataclass
class CellResult:
    """What a %%c cell did: the region's readings measured and simulated, side by side."""

    label: str  # "region" (PL_REGION_BEGIN..END) or "main()"
    measured: list
    simulated: list = field(default_factory=list)
    simulated_reason: str | None = None  # why there is no simulated answer
    stdout: str = ""
    status: int = 0
    notes: list = field(default_factory=list)
    exited: bool = False  # main() ended by calling exit(status)
    mode: str = "every"  # what the simulated build fed the simulator (MODES)
    lines: LineView | None = None  # the simulated counts line by line
    builds: list = field(default_factory=list)  # the compiler and the flags of both builds

    def __getitem__(self, name):
        for r in self.measured + self.simulated:
            if r.name == name:
                return r
        raise KeyError(name)

    def __str__(self):
        shown = [r for r in self.measured if r.source != "rusage" or r.name in RUSAGE_SHOWN]
        sim = {r.name: r for r in self.simulated if r.value or "store" not in r.name}
        rows = [(r, sim.pop(r.name, None)) for r in shown]
        rows += [(None, r) for r in sim.values()]
        width = max(len((m or s).name) for m, s in rows)
        what = "PL_REGION_BEGIN..END" if self.label == "region" else "all of main()"
        lines = [f"{what}, compiled -O2; {ending(self.status, self.exited)}"]
        lines += [f"  {b}" for b in self.builds]
        lines.append(f"  {'':<{width}}  {'measured':<28}  simulated")
        missing = {}
        for m, s in rows:
            if m is not None and m.value is None:
                missing.setdefault(m.reason, []).append(m.name)
            left = _cell_text(m) if m else "-"
            right = _cell_text(s) if s else ("" if self.simulated else "-")
            lines.append(f"  {(m or s).name:<{width}}  {left:<28}  {right}".rstrip())
        lines += [f"  not counted here: {why} ({', '.join(n)})" for why, n in missing.items()]
        if self.simulated_reason:
            lines.append(f"  simulated: {self.simulated_reason}")
        elif self.simulated:
            fed = (
                "every load and store of the cell (compiler instrumentation)"
                if self.mode == "every"
                else "every PL_LOAD/STORE"
            )
            lines.append(f"  simulated: a model of this machine's caches and TLB, fed {fed}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _cell_text(r):
    if r.value is None:
        if r.fallback is not None:
            return f"{_number(r.fallback)} ({r.fallback.source}: {r.fallback.name})"
        return "n/a"
    tags = [r.source] + ["scaled"] * r.scaled + ["user only"] * r.kernel_excluded
    return f"{_number(r)} ({', '.join(tags)})"


def _number(r):
    if r.unit == "s":
        return f"{r.value:.6f} s"
    if r.unit == "ns":
        return f"{r.value / 1e6:,.3f} ms"
    return f"{r.value:,.0f}" + (f" {r.unit}" if r.unit else "")


def ending(status, exited):
    """How main() ended, for the result's first line."""
    return f"main() called exit({status})" if exited else f"main() returned {status}"
