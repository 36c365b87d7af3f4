"""Misses line by line: the simulator's counts of a C program charged to its source lines.

A %%c cell (or `pagelab sim c FILE.c`) reports each access with its call site; the cell runner
maps call sites to lines with the object's debug information, and this module adds them up per
line and shows them as the program's source with a heat column: the share of the L1 misses each
line caused, the hottest lines marked. Every count is simulated (source "sim").
"""

import html
from dataclasses import dataclass, field

SOURCE = "sim"
# the counts kept per line, in the order the C runner reports them (struct pl_cell_site)
COUNTS = (
    "reads",
    "writes",
    "l1_read_misses",
    "l1_write_misses",
    "llc_read_misses",
    "llc_write_misses",
    "tlb_misses",
    "compulsory",
    "capacity",
    "conflict",
    "coherence",
)
HOTTEST = 3  # lines marked as the hottest (by L1 misses)
BAR = 10  # characters of the text form's heat bar
_BLOCKS = " ▏▎▍▌▋▊▉█"


@dataclass
class LineCounts:
    """What the accesses on one source line did in the simulated caches."""

    reads: int = 0
    writes: int = 0
    l1_read_misses: int = 0
    l1_write_misses: int = 0
    llc_read_misses: int = 0
    llc_write_misses: int = 0
    tlb_misses: int = 0
    compulsory: int = 0
    capacity: int = 0
    conflict: int = 0
    coherence: int = 0  # misses on a line another thread's write took away (threads simulated)

    @property
    def accesses(self):
        return self.reads + self.writes

    @property
    def l1_misses(self):
        return self.l1_read_misses + self.l1_write_misses

    @property
    def llc_misses(self):
        return self.llc_read_misses + self.llc_write_misses

    def add(self, counts):
        for name, value in zip(COUNTS, counts):
            setattr(self, name, getattr(self, name) + value)


@dataclass
class LineView:
    """A C program's source with the simulated counts of each line beside it.

    ``lines`` maps a line number (from 1) to its LineCounts; ``outside`` holds the accesses whose
    call site is not a line of this source (a system header's inline function, code without
    line information). ``levels`` says which columns the model had: "llc" and "tlb" when there
    is a last level below L1 and a DTLB, "classes" when L1 misses were classified. ``notes``
    say what was not seen (library calls, other threads) and what span the counts cover.
    """

    name: str
    source: str
    lines: dict
    outside: LineCounts = field(default_factory=LineCounts)
    levels: tuple = ("llc", "tlb", "classes")
    notes: list = field(default_factory=list)
    threads: dict = field(default_factory=dict)

    @property
    def totals(self):
        t = LineCounts()
        for c in [*self.lines.values(), self.outside]:
            t.add([getattr(c, n) for n in COUNTS])
        return t

    def hottest(self, n=HOTTEST):
        """The line numbers with the most L1 misses, most first (only lines that missed)."""
        ranked = sorted(
            (no for no, c in self.lines.items() if c.l1_misses),
            key=lambda no: (-self.lines[no].l1_misses, no),
        )
        return ranked[:n]

    def _columns(self):
        cols = [("accesses", "accesses"), ("L1 misses", "l1_misses")]
        if "llc" in self.levels:
            cols.append(("LLC misses", "llc_misses"))
        if "tlb" in self.levels:
            cols.append(("DTLB misses", "tlb_misses"))
        if "classes" in self.levels:
            cols += [("compulsory", "compulsory"), ("capacity", "capacity")]
            cols.append(("conflict", "conflict"))
        if "coherence" in self.levels:
            cols.append(("coherence", "coherence"))
        return cols

    def _thread_rows(self, no):
        """The per-thread rows under line no, when more than one thread ran it."""
        by = self.threads.get(no, {})
        return sorted(by.items()) if len(by) > 1 else []

    def __str__(self):
        cols = self._columns()
        src = self.source.splitlines()
        top = max((c.l1_misses for c in self.lines.values()), default=0)
        rank = {no: i + 1 for i, no in enumerate(self.hottest())}
        cells = {no: [f"{getattr(c, attr):,}" for _, attr in cols] for no, c in self.lines.items()}
        widths = [
            max([len(title), *(len(v[i]) for v in cells.values())])
            for i, (title, _) in enumerate(cols)
        ]

        def thread_lines(no):
            for t, c in self._thread_rows(no):
                numbers = "  ".join(
                    f"{getattr(c, a):,}".rjust(w) for (_, a), w in zip(cols, widths)
                )
                yield f"{'':>5}  {numbers}  {'':<{BAR}}    (thread {t})".rstrip()

        head = "  ".join(f"{t:>{w}}" for (t, _), w in zip(cols, widths))
        out = [f"{self.name}: simulated counts per line (source: sim); # = share of L1 misses"]
        out.append(f"{'line':>5}  {head}  {'heat':<{BAR}}  source")
        for no, text in enumerate(src, 1):
            c = self.lines.get(no)
            if c is None:
                numbers = "  ".join(" " * w for w in widths)
                bar = ""
            else:
                numbers = "  ".join(f"{v:>{w}}" for v, w in zip(cells[no], widths))
                bar = _bar(c.l1_misses / top if top else 0)
            mark = f"   <- #{rank[no]}" if no in rank else ""
            out.append(f"{no:>5}  {numbers}  {bar:<{BAR}}  {text}{mark}".rstrip())
            out.extend(thread_lines(no))
        if self.outside.accesses:
            values = [f"{getattr(self.outside, a):,}" for _, a in cols]
            numbers = "  ".join(f"{v:>{w}}" for v, w in zip(values, widths))
            out.append(f"{'':>5}  {numbers}  {'':<{BAR}}  (elsewhere: no line of this source)")
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _repr_html_(self):
        cols = self._columns()
        top = max((c.l1_misses for c in self.lines.values()), default=0)
        rank = {no: i + 1 for i, no in enumerate(self.hottest())}
        th = "".join(f"<th>{html.escape(t)}</th>" for t, _ in cols)
        rows = []
        for no, text in enumerate(self.source.splitlines(), 1):
            c = self.lines.get(no)
            share = c.l1_misses / top if c is not None and top else 0
            tds = "".join(
                f"<td>{getattr(c, a):,}</td>" if c is not None else "<td></td>" for _, a in cols
            )
            mark = f" <b>#{rank[no]}</b>" if no in rank else ""
            style = f' style="background: rgba(214, 39, 40, {0.6 * share:.3f})"' if share else ""
            cls = ' class="pagelab-hot"' if no in rank else ""
            rows.append(
                f"<tr{cls}{style}><td>{no}</td>{tds}"
                f"<td style='text-align: left; white-space: pre'>{html.escape(text)}{mark}"
                "</td></tr>"
            )
        notes = "".join(f"<div>note: {html.escape(n)}</div>" for n in self.notes)
        return (
            '<div class="pagelab-lines">'
            f"<div>{html.escape(self.name)}: simulated counts per line (source: sim); "
            "the shade is the line's share of the L1 misses</div>"
            '<table style="font-family: monospace; border-collapse: collapse; text-align: right">'
            f"<tr><th>line</th>{th}<th style='text-align: left'>source</th></tr>"
            + "".join(rows)
            + f"</table>{notes}</div>"
        )

    def to_dict(self):
        """JSON-ready: every line that made an access, its counts, and where they come from."""

        def counts(c):
            d = {n: getattr(c, n) for n in COUNTS if _shown(n, self.levels)}
            d["accesses"] = c.accesses
            return d

        def line(no, c):
            d = {"line": no, "text": src[no - 1] if no <= len(src) else "", **counts(c)}
            if "coherence" in self.levels:
                d["threads"] = [
                    {"thread": t, **counts(tc)}
                    for t, tc in sorted(self.threads.get(no, {}).items())
                ]
            return d

        src = self.source.splitlines()
        return {
            "name": self.name,
            "source": SOURCE,
            "lines": [line(no, c) for no, c in sorted(self.lines.items())],
            "outside": counts(self.outside),
            "hottest": self.hottest(),
            "notes": list(self.notes),
        }


def _shown(name, levels):
    if name.startswith("llc"):
        return "llc" in levels
    if name.startswith("tlb"):
        return "tlb" in levels
    if name in ("compulsory", "capacity", "conflict"):
        return "classes" in levels
    if name == "coherence":
        return "coherence" in levels
    return True


def _bar(share):
    """A heat bar of BAR characters, in eighths."""
    eighths = round(share * BAR * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + (_BLOCKS[part] if part else "")
