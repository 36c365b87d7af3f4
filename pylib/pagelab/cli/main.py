"""The `pagelab` command line. Bad input exits 2 with one line on stderr; nothing is half-run."""

import argparse
import os
import re
import sys

from .._version import __version__
from ..core.errors import BadInput, PagelabError, os_error_line
from ..core.numbers import format_size


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadInput(f"{message} (see `{self.prog} --help`)")


def _print_json(doc):
    import json  # here: a command without --json does not load it

    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")


def _doctor(args):
    from ..counters.doctor import doctor

    report = doctor()
    _print_json(report.to_dict()) if args.json else print(report)
    return 0


def _stat(args):
    from ..counters.stat import stat

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise BadInput("stat needs a command after `--`, e.g. pagelab stat -- ls")
    # with --json, stdout carries the one JSON document: the command's own output goes to stderr
    result = stat(
        command,
        args.events,
        stdout=sys.stderr.fileno() if args.json else None,
        cpu_type=args.cpu_type,
    )
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result, file=sys.stderr)
    return result.exit_status  # as shells report it: 128 + N for a child killed by signal N


def _settings(pairs):
    params = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise BadInput(f"--set takes KEY=VALUE, got {pair!r}")
        if key in params:
            raise BadInput(f"--set {key} given twice")
        params[key] = value
    return params


def _run(args):
    from .._version import __version__
    from ..core import progress as _progress
    from ..counters.doctor import environment
    from ..experiments import runner as runner

    if args.list:
        if args.set or args.sim or args.json or args.cpu_type:
            raise BadInput("run --list takes no --set, --sim, --cpu-type or --json")
        if args.experiment == "all":
            raise BadInput("run --list takes one experiment name, or none for all of them")
        names = [args.experiment] if args.experiment else runner.experiment_names()
        for name in names:
            params = runner.parameters(name).values()  # BadInput for an unknown name
            print(name)
            for p in params:
                print(f"    {p.describe()}")
        return 0
    if not args.experiment:
        raise BadInput("run needs an experiment name, `all`, or --list")
    if args.experiment == "all":
        if args.set or args.sim or args.cpu_type:
            raise BadInput("run all takes no --set, --sim or --cpu-type: it runs every default")
        results = runner.run_all(progress=_progress.lines)
        if args.json:
            _print_json(
                {
                    "version": __version__,
                    "environment": environment(),
                    "results": [r.to_dict() for r in results],
                }
            )
        else:
            print("\n\n".join(str(r) for r in results))
        return 0
    result = runner.run(
        args.experiment,
        sim=args.sim,
        progress=_progress.lines,
        cpu_type=args.cpu_type,
        **_settings(args.set),
    )
    _print_json(result.to_dict()) if args.json else print(result)


def _bench_args(extra):
    """python -m bench's options, checked here so that a bad one is one line and runs nothing."""
    out, it = [], iter(extra)
    for a in it:
        if a in ("--json", "--fast"):
            out.append(a)
        elif a in ("-o", "--output"):
            path = next(it, None)
            if path is None or path.startswith("-"):
                raise BadInput(f"pagelab bench {a} needs a file name")
            out += [a, path]
        else:
            raise BadInput(f"pagelab bench takes --json, --fast and -o FILE, not {a!r}")
    return out


def _bench(args):
    """The benchmark measures a checkout (its C sources, its tests' programs), so it lives there,
    outside the package: run it in the checkout this directory belongs to."""
    import subprocess
    from pathlib import Path

    options = _bench_args(args.extra)
    here = Path.cwd()
    root = next(
        (d for d in (here, *here.parents) if (d / "bench" / "run.py").is_file()),
        None,
    )
    if root is None:
        raise BadInput(
            "pagelab bench measures a pagelab checkout: run it inside one "
            "(it runs `python -m bench` there; docs/bench.md)"
        )
    return subprocess.call([sys.executable, "-m", "bench", *options], cwd=root)


CPU_TYPE_HELP = (
    "run and count on one core type only, named by its PMU (e.g. cpu_core or cpu_atom on a "
    "hybrid Intel CPU; `pagelab doctor` lists them)"
)
CONFIG_LIMIT = 1 << 20  # a simulator config is a few hundred bytes; /dev/zero is not one
_MODEL_OPTIONS = ("config", "l1", "l2", "llc", "tlb", "stlb", "page", "policy", "seed")


def _sim_spec(args):
    """The simulator config dict from --config FILE, then the options that override it."""
    import json

    spec = {}
    if args.config:
        try:
            with open(args.config, "rb") as f:
                text = f.read(CONFIG_LIMIT + 1)
            if len(text) > CONFIG_LIMIT:
                raise ValueError(f"longer than {format_size(CONFIG_LIMIT)}")
            spec = json.loads(text)
        except RecursionError:
            raise BadInput(f"cannot read config {args.config}: nested too deeply") from None
        except (OSError, ValueError) as e:
            raise BadInput(f"cannot read config {args.config}: {e}") from None
        if not isinstance(spec, dict):
            raise BadInput(f"config {args.config} must hold a JSON object")
    for key in _MODEL_OPTIONS[1:]:
        value = getattr(args, key)
        if value is not None:
            spec[key] = value  # --tlb is the config's "tlb", an alias of "dtlb"
    if args.no_classify:
        spec["classify"] = False
    return spec


def _sim_trace(args):
    lab = (args.s, args.E, args.b)
    if any(v is not None for v in lab):
        if None in lab:
            raise BadInput("cache-lab mode needs all three of -s, -E and -b")
        given = [k for k in _MODEL_OPTIONS if getattr(args, k) is not None]
        if given or args.no_classify:
            option = f"--{given[0]}" if given else "--no-classify"
            raise BadInput(f"{option} does not apply in cache-lab mode (-s -E -b)")
        from ..sim.cachelab import cachelab  # alone: the whole command is compared with csim-ref

        result = cachelab(args.file, args.s, args.E, args.b, verbose=args.verbose)
        _print_json(result.to_dict()) if args.json else print(result)
        return 0
    if args.verbose:
        raise BadInput("-v is for cache-lab mode (with -s, -E and -b)")
    from ..sim.simulator import Simulator

    sim = Simulator(_sim_spec(args))
    sim.replay(args.file)
    stats = sim.stats()
    _print_json(stats.to_dict("sim-trace")) if args.json else print(stats)
    return 0


SOURCE_LIMIT = 1 << 20  # a C file to simulate is source code, not data


def _sim_c(args):
    from ..cell.build import sim_mode
    from ..cell.result import ending
    from ..cell.run import parse_threads_model, simulate_c
    from ..sim.config import make_config
    from ..sim.report import MODEL

    try:
        with open(args.file, "rb") as f:
            raw = f.read(SOURCE_LIMIT + 1)
        if len(raw) > SOURCE_LIMIT:
            raise ValueError(f"longer than {format_size(SOURCE_LIMIT)}")
        source = raw.decode()
    except (OSError, ValueError) as e:
        raise BadInput(f"cannot read {args.file}: {e}") from None
    if args.timeout <= 0:
        raise BadInput("--timeout must be positive")
    threads = parse_threads_model(args.threads_model)  # a bad value fails before anything runs
    spec = _sim_spec(args)
    config = make_config(spec)  # the machine read once; a bad geometry fails before any build
    name = os.path.basename(args.file)
    readings, lines, run = simulate_c(
        source,
        sim=args.sim or True,
        config=config,
        timeout=args.timeout,
        force=args.force,
        name=name if re.fullmatch(r"[\w.+-]+", name) else "program.c",
        threads_model=args.threads_model,
    )
    if args.json:
        _print_json(
            {
                "experiment": "sim-c",
                "version": __version__,
                "params": {
                    "file": args.file,
                    "mode": args.sim or sim_mode(source),
                    "config": config.to_dict(),
                    "model": MODEL,
                    "threads_model": {"model": threads[0], "quantum": threads[1]},
                },
                "measurements": [
                    {"label": run["label"], "metrics": {r.name: r.to_dict() for r in readings}}
                ],
                "lines": lines.to_dict(),
            }
        )
        return 0
    if run["stdout"]:
        print(run["stdout"], end="" if run["stdout"].endswith("\n") else "\n")
    what = "the first PL_REGION_BEGIN..END" if run["label"] == "region" else "all of main()"
    print(f"{args.file}: {what}, compiled -O2; {ending(run['status'], run['exited'])}")
    for line in run["builds"]:
        print(f"  {line}")
    width = max(len(r.name) for r in readings)
    for r in readings:
        print(f"  {r.name:<{width}}  {r.value:>14,} (sim)")
    print(f"  model: {MODEL}")
    for note in run["notes"]:
        print(f"  note: {note}")
    print()
    print(lines)
    return 0


def _report(args):
    from ..experiments.classreport import class_report

    report = class_report(args.directory)
    figure = report.figure() if args.figure else None
    try:
        written = report.write_pyperf(args.pyperf) if args.pyperf else []
        if figure:
            figure.write_html(args.figure)
            written.append(args.figure)
    except OSError as e:
        raise BadInput(f"cannot write {e.filename}: {e.strerror}") from None
    for path in written:
        print(f"pagelab: wrote {path}", file=sys.stderr)
    _print_json(report.to_dict()) if args.json else print(report)
    return 0


def _lab(args):
    from .lab import lab_command, sync_chapters, work_dir

    if args.copy_only:
        if args.extra:
            raise BadInput(f"--copy-only starts no JupyterLab: drop {' '.join(args.extra)}")
        print(f"pagelab: {sync_chapters(reset=args.reset)}", file=sys.stderr)
        return 0
    argv = lab_command(args.extra, work_dir())
    print(f"pagelab: {sync_chapters(reset=args.reset)}", file=sys.stderr, flush=True)
    if "--allow-root" in argv and "--allow-root" not in args.extra:
        print(
            "pagelab: running as root, so JupyterLab gets --allow-root",
            file=sys.stderr,
            flush=True,
        )
    os.execv(argv[0], argv)


def _model_options(p):
    """The simulator's geometry options, shared by `sim trace` and `sim c`."""
    p.add_argument(
        "--config",
        help="JSON file of settings (keys: l1 l2 llc dtlb stlb page "
        "policy seed classify); options below override it",
    )
    p.add_argument("--l1", help="L1D as SIZE:WAYS:LINE, e.g. 32K:8:64, or none")
    p.add_argument("--l2", help="L2 as SIZE:WAYS:LINE, or none")
    p.add_argument("--llc", help="last-level cache as SIZE:WAYS:LINE, or none")
    p.add_argument("--tlb", help="L1 DTLB as ENTRIES:WAYS, e.g. 64:4, or none")
    p.add_argument("--stlb", help="second-level TLB as ENTRIES:WAYS, or none")
    p.add_argument("--page", help="page size: 4k (default) or 2m")
    p.add_argument("--policy", help="cache replacement: lru (default), fifo, random, plru")
    p.add_argument("--seed", help="seed of the random policy (default 0)")
    p.add_argument(
        "--no-classify",
        action="store_true",
        help="skip compulsory/capacity/conflict classification (faster)",
    )


def _parser():
    p = _Parser(prog="pagelab", description="A Jupyter teaching lab for the Linux memory system.")
    from .._version import __version__

    p.add_argument("--version", action="version", version=f"pagelab {__version__}")
    sub = p.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    d = sub.add_parser("doctor", help="name this machine's profile and explain every event")
    d.add_argument("--json", action="store_true", help="one JSON document on stdout")
    d.set_defaults(func=_doctor)

    s = sub.add_parser(
        "stat",
        help="count events for a command, like perf stat",
        usage="pagelab stat [-e EVENT,...] [--cpu-type PMU] [--json] -- CMD [ARG ...]",
    )
    s.add_argument("-e", "--events", help="comma-separated events (default: a standard set)")
    s.add_argument("--cpu-type", help=CPU_TYPE_HELP)
    s.add_argument("--json", action="store_true", help="one JSON document on stdout")
    s.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    s.set_defaults(func=_stat)

    r = sub.add_parser(
        "run",
        help="run an experiment (or all) in isolated workers",
        usage="pagelab run EXPERIMENT|all [--set KEY=VALUE ...] [--sim] [--cpu-type PMU] [--json]",
    )
    r.add_argument("--cpu-type", help=CPU_TYPE_HELP)
    r.add_argument("experiment", nargs="?", help="an experiment name, or `all`")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", help="a parameter")
    r.add_argument(
        "--sim",
        action="store_true",
        default=None,
        help="also run the simulated build (the default where there is no PMU)",
    )
    r.add_argument("--json", action="store_true", help="one JSON document on stdout")
    r.add_argument("--list", action="store_true", help="list experiments and their parameters")
    r.set_defaults(func=_run)

    sim = sub.add_parser("sim", help="the cache/TLB simulator")
    sim_sub = sim.add_subparsers(dest="sim_verb", required=True, parser_class=_Parser)
    t = sim_sub.add_parser(
        "trace",
        help="replay a valgrind lackey trace through the simulated caches and TLBs",
        usage="pagelab sim trace FILE -s S -E E -b B [-v] [--json]\n"
        "       pagelab sim trace FILE [--config FILE] [--l1 SIZE:WAYS:LINE] [--l2 ...] "
        "[--llc ...] [--tlb ENTRIES:WAYS] [--stlb ...] [--page 4k|2m] "
        "[--policy lru|fifo|random|plru] [--seed N] [--no-classify] [--json]",
        description="Without -s/-E/-b: the multi-level model, geometry from this machine "
        "unless overridden (a level set to 'none' is left out). With -s -E -b: "
        "cache-lab mode, output as CS:APP's csim-ref.",
    )
    t.add_argument("file", help="trace from valgrind --tool=lackey --trace-mem=yes")
    t.add_argument("-s", help="cache-lab: 2^s sets")
    t.add_argument("-E", help="cache-lab: lines per set")
    t.add_argument("-b", help="cache-lab: 2^b-byte blocks")
    t.add_argument("-v", "--verbose", action="store_true", help="cache-lab: one line per record")
    _model_options(t)
    t.add_argument("--json", action="store_true", help="one JSON document on stdout")
    t.set_defaults(func=_sim_trace)

    c = sim_sub.add_parser(
        "c",
        help="compile a C program and simulate its every load and store, misses per line",
        usage="pagelab sim c FILE.c [--sim every|marked] [--config FILE] [--l1 SIZE:WAYS:LINE] "
        "[--l2 ...] [--llc ...] [--tlb ENTRIES:WAYS] [--stlb ...] [--page 4k|2m] "
        "[--policy lru|fifo|random|plru] [--seed N] [--no-classify] "
        "[--threads-model cores|cores:N|main] [--force] [--timeout S] [--json]",
        description="Compiles FILE.c (a program with main(); pagelab_cell.h is included for "
        "you) -O2 -g with the compiler's instrumentation, runs it in a worker with every load "
        "and store fed to the simulator, and prints the counts with the source, line by line.",
    )
    c.add_argument("file", help="a C source file with main()")
    c.add_argument(
        "--sim",
        choices=("every", "marked"),
        help="every load and store, or only PL_LOAD/PL_STORE (default: marked when it has them)",
    )
    _model_options(c)
    c.add_argument(
        "--threads-model",
        help="cores (default): every thread on a core of its own with MESI coherence, "
        "interleaved a fixed number of accesses a turn; cores:N: N a turn; "
        "main: main()'s thread only",
    )
    c.add_argument("--force", action="store_true", help="compile again even if cached")
    c.add_argument("--timeout", type=float, default=60.0, help="seconds the run may take")
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    c.set_defaults(func=_sim_c)

    b = sub.add_parser(
        "bench",
        help="the performance figures: runs the checkout's `python -m bench` (docs/bench.md)",
        usage="pagelab bench [--json] [--fast] [-o PYPERF.json]",
    )
    b.set_defaults(func=_bench, takes_extra=True)  # python -m bench parses its own options

    rep = sub.add_parser(
        "report",
        help="compare `pagelab run all --json` files from many machines (one per file)",
        usage="pagelab report DIR [--json] [--figure FILE.html] [--pyperf OUTDIR]",
    )
    rep.add_argument("directory", help="a directory of NAME.json files, one per machine")
    rep.add_argument("--json", action="store_true", help="one JSON document on stdout")
    rep.add_argument("--figure", metavar="FILE.html", help="also write the plotly figure")
    rep.add_argument(
        "--pyperf", metavar="OUTDIR", help="also write OUTDIR/NAME.json in pyperf's format"
    )
    rep.set_defaults(func=_report)

    lab = sub.add_parser(
        "lab",
        help="open JupyterLab on your copy of the chapters ($PAGELAB_HOME, else "
        "~/pagelab-notebooks); other arguments (e.g. --no-browser --port 8899) go to jupyter lab",
        usage="pagelab lab [--reset] [--copy-only] [JUPYTER-LAB-ARGS ...]",
    )
    lab.add_argument(
        "--reset",
        action="store_true",
        help="restore the original chapters (your edited copies move to a backup folder)",
    )
    lab.add_argument(
        "--copy-only",
        action="store_true",
        help="copy or update the chapters and exit (e.g. a JupyterHub postStart hook)",
    )
    lab.set_defaults(func=_lab, takes_extra=True)
    return p


def main(argv=None):
    try:
        parser = _parser()
        args, args.extra = parser.parse_known_args(argv)
        if args.extra and not getattr(args, "takes_extra", False):
            parser.error(f"unrecognized arguments: {' '.join(args.extra)}")
        return args.func(args)
    except BadInput as e:
        print(f"pagelab: error: {e}", file=sys.stderr)
        return 2
    except PagelabError as e:
        print(f"pagelab: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("pagelab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: stop quietly, as other Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as e:  # out of a resource (fds, memory, disk) or a file: say which
        print(f"pagelab: {os_error_line(e)}", file=sys.stderr)
        return 1
    except MemoryError as e:  # e.g. the simulator's tables could not grow
        print(f"pagelab: {e or 'out of memory'}", file=sys.stderr)
        return 1
