"""`%load_ext pagelab`: IPython magics for measuring in the notebook.

- ``%%counters [-e EVENTS] [--live] [-o]``: count events around one cell (this kernel's main
  thread; rusage for the whole process), stating the measurement's own overhead.
- ``%%c [-e EVENTS] [--timeout S] [--mem MIB] [--sim every|marked] [--no-sim]
  [--threads-model cores|cores:N|main] [--force] [-o]``:
  the cell is C; compile it -O2 and run it in a worker, measured and simulated side by side, and
  show the simulated misses line by line (see pagelab.cell).
- ``%maps [PID]``: a process's memory map (default: this kernel) as a table and a figure.
- ``%pagelab doctor``: the profile and every event's availability, as `pagelab doctor` prints.
- ``%pagelab autocount on|off``: counts under every executed cell (see pagelab.jupyter.autocount).
"""

import os
import sys

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..cell import run as _cell
from ..cell.build import MODES
from ..core.errors import PagelabError
from ..counters.group import measure
from ..native.worker import Interrupted


def _fail(message):
    """One clear line on stderr instead of a traceback: the kernel carries on."""
    print(f"pagelab: {message}", file=sys.stderr)


@magics_class
class PagelabMagics(Magics):
    @magic_arguments()
    @argument("-e", "--events", help="comma-separated events (default: pagelab's defaults)")
    @argument("--live", action="store_true", help="show live counters while the cell runs")
    @argument("-o", "--output", action="store_true", help="return the Measurement")
    @cell_magic
    def counters(self, line, cell):
        """Count events around this cell, like %%timeit for counters.

        Counts this kernel's main thread (where the cell runs) with perf_event_open; each reading
        names its source, and unavailable counters say why, with their rusage stand-ins. The
        overhead line is what measuring an empty cell costs, measured just before.
        """
        args = parse_argstring(self.counters, line)
        code = compile(self.shell.transform_cell(cell), "<%%counters cell>", "exec")
        try:
            with measure(args.events) as empty:
                pass
            widget = self._live(args.events) if args.live else None
            try:
                with measure(args.events) as m:
                    exec(code, self.shell.user_ns)
            finally:
                if widget is not None:
                    widget.stop()
                    widget.sample()  # the final totals, after the cell
        except PagelabError as e:
            return _fail(str(e))
        print("counted on this kernel's main thread (rusage: the whole kernel process)")
        print(m)
        print(f"overhead (an empty cell, measured just before): {_overhead(empty)}")
        return m if args.output else None

    def _live(self, events):
        from IPython.display import display

        from .live import LiveCounters

        widget = LiveCounters(events, interval_ms=50)
        display(widget)
        return widget

    @magic_arguments()
    @argument("-e", "--events", help="comma-separated events measured around the region")
    @argument("--timeout", type=float, default=_cell.DEFAULT_TIMEOUT, help="seconds per run")
    @argument("--mem", type=int, default=_cell.DEFAULT_MEMORY >> 20, help="MiB the cell may map")
    @argument(
        "--sim",
        choices=MODES,
        help="simulate every load and store, or only PL_LOAD/PL_STORE (default: marked when "
        "the cell uses them)",
    )
    @argument("--no-sim", action="store_true", help="skip the simulated run")
    @argument(
        "--threads-model",
        help="cores (default): every thread on a core of its own; cores:N: N accesses a turn; "
        "main: main()'s thread only",
    )
    @argument("--force", action="store_true", help="compile again even if the cell is cached")
    @argument("-o", "--output", action="store_true", help="return the CellResult")
    @cell_magic
    def c(self, line, cell):
        """Compile this cell's C with -O2 and run it in a worker: measured and simulated.

        The cell is a C program with main(). The simulated run feeds every load and store of the
        cell to the cache/TLB model and shows the misses line by line. pagelab_cell.h is
        included for you: bracket the code to measure with PL_REGION_BEGIN(); ...
        PL_REGION_END(); to simulate only chosen accesses, write them as PL_LOAD(p) and
        PL_STORE(p, v); keep results alive with PL_KEEP(x). Builds are cached (--force
        compiles again). Compiler errors show with the cell's line numbers; a crash, an endless
        loop (--timeout) or too much memory (--mem) ends the worker with one line, and the
        kernel carries on.
        """
        args = parse_argstring(self.c, line)
        if args.timeout <= 0 or args.mem <= 0:
            raise UsageError("--timeout and --mem must be positive")
        if args.no_sim and args.sim:
            raise UsageError("--sim and --no-sim exclude each other")
        events = args.events.split(",") if args.events else None
        try:
            result = _cell.run_c(
                cell,
                events,
                sim=False if args.no_sim else args.sim or True,
                timeout=args.timeout,
                memory=args.mem << 20,
                force=args.force,
                threads_model=args.threads_model,
            )
        except Interrupted as e:
            return _fail(str(e))
        except PagelabError as e:
            return _fail(str(e))
        if result.stdout:
            print(result.stdout, end="" if result.stdout.endswith("\n") else "\n")
        if not args.output:  # (with -o the returned result shows itself)
            print(result)
        if result.lines is not None:
            from IPython.display import display

            display(result.lines)
        return result if args.output else None

    @magic_arguments()
    @argument("pid", nargs="?", type=int, help="a process id (default: this kernel)")
    @line_magic
    def maps(self, line):
        """Show a process's memory map (default: this kernel's) as a table and a figure."""
        from IPython.display import display

        from ..experiments.maps import KIND_COLORS
        from ..machine.maps import parse_maps
        from ..results.plots import memory_map

        args = parse_argstring(self.maps, line)
        pid = args.pid or os.getpid()
        try:
            with open(f"/proc/{pid}/maps") as f:
                text = f.read()
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError as e:
            return _fail(f"cannot read the memory map of pid {pid}: {e.strerror}")
        regions = parse_maps(text, executable=exe)
        print(maps_table(regions))
        title = f"memory map of pid {pid}" + (" (this kernel)" if pid == os.getpid() else "")
        display(memory_map(title, {f"pid {pid}": regions}, KIND_COLORS))

    @line_magic
    def pagelab(self, line):
        """%pagelab doctor: this machine's profile and which counters work here, and why not.
        %pagelab autocount on|off: a line of counts (page faults, minflt, majflt, task-clock,
        with their sources and the hooks' own cost) under every cell executed from now on."""
        words = line.split()
        if words == ["doctor"]:
            from ..counters.doctor import doctor

            print(doctor())
        elif words in (["autocount", "on"], ["autocount", "off"]):
            self.autocount(words[1] == "on")
        else:
            raise UsageError("usage: %pagelab doctor | %pagelab autocount on|off")

    def autocount(self, on):
        from .autocount import AutoCount

        current = getattr(self, "_autocount", None)
        if current is not None:
            current.close()
            self._autocount = None
        if on:
            try:
                self._autocount = AutoCount(self.shell)
            except (PagelabError, OSError) as e:
                return _fail(f"autocount: {e}")
            print(f"autocount on: counts under every cell; hooks' own cost {self._autocount.cost}")
        else:
            print("autocount off")


def maps_table(regions):
    """A memory map as text: one row per region (Region's own format), with a header."""
    header = f"{'start':<12} {'end':<12} perm {'size':>9} {'kind':<8} file"
    return "\n".join([header, *map(str, regions)])


def _overhead(m):
    parts = []
    for name in ("task-clock", "page-faults"):
        try:
            r = m[name]
        except KeyError:
            continue
        if r.value is not None:
            value = f"{r.value / 1000:,.1f} us" if r.unit == "ns" else f"{r.value:,}"
            parts.append(f"{name} {value} ({r.source})")
    parts.append(f"elapsed {m.elapsed.value * 1e6:,.0f} us (clock)")
    return ", ".join(parts)


def load(ipython):
    ipython.register_magics(PagelabMagics)


def unload(ipython):
    magics = ipython.magics_manager.registry.get("PagelabMagics")
    if magics is not None:
        magics.autocount(False)
    # IPython has no unregister_magics: drop ours from the tables by name
    for kind, names in (("cell", ("counters", "c")), ("line", ("maps", "pagelab"))):
        for name in names:
            ipython.magics_manager.magics[kind].pop(name, None)
