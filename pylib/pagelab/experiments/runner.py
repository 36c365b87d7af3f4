"""`pagelab run`: validate, check the memory budget, run in workers, evaluate the claims."""

import importlib
import os
import time
from dataclasses import dataclass, field, replace

from ..core import progress as _progress
from ..core.errors import BadInput, BudgetExceeded
from ..core.numbers import format_size, quote
from ..core.reading import Reading
from ..counters.doctor import environment, profile
from ..machine import caches as _caches
from ..machine import environment as env
from ..machine import pmus as _pmus
from ..native import worker as _worker
from ..native import workloads as _workloads
from ..results.result import Measured, Result
from ..sim.config import ASSUMED, make_config

MIB = 1 << 20
WORKLOAD = "pagelab.native.workloads:execute"  # the worker task that runs a C workload


def experiment_names():
    """The experiment names, in chapter order (from the C workload table)."""
    return list(_workloads.WORKLOADS)


def _module(name):
    return importlib.import_module(f"pagelab.experiments.{name.replace('-', '_')}")


@dataclass
class Context:
    """What an experiment module's run() gets: parameters resolved once, the simulator's
    configuration built and checked once (before anything ran), and ways to run workers."""

    name: str
    params: dict  # name -> int: validated against the C table, automatic values resolved
    given: dict  # the parameters as given (validated, with 0 where "automatic" was asked for)
    budget: dict  # the memory budget, read once (environment.memory_budget)
    sim: dict | None  # the simulated run's SimConfig.to_dict(), or None: no simulated run
    timeout: float
    progress: object
    address_space: int
    module: object  # the experiment's module: memory(), run(), simulation(), resolve()
    environment: dict = field(default_factory=environment)
    handle: "RunHandle | None" = None  # set when the run is in the background (start())
    ahead: tuple | None = None  # (worker args, Job): its simulated run, started by run_all
    sim_config: dict | None = None  # the geometry the simulated run used (SimConfig.to_dict)
    sim_overrides: dict = field(default_factory=dict)  # simulation()'s parameter overrides
    cpu_type: str | None = None  # the core type its workers run and count on (None: any)
    pin_note: str | None = None  # why it runs on one core type, said in the result

    def workload(self, events=None, sim=None, what=None, scratch=None, **overrides):
        """Run this experiment's C workload once in a fresh worker; returns (measurements, raw).
        ``scratch`` (a pagelab.native.scratch.Scratch) is the worker's working directory, where the
        workload makes its file. In a background run (``start``) the worker is a Job that the
        run handle follows, so a LiveCounters can watch it."""
        return self._call(*self._request(events, sim, what, scratch, overrides))

    def simulated(self):
        """Run the simulated build of the workload as the module's ``simulation(params)`` asks
        (a sim config and parameter overrides): (measurements, raw). A run that run_all started
        ahead with the same request is collected instead of run again."""
        args, kwargs = self._simulation()
        ahead, self.ahead = self.ahead, None
        if ahead is not None and ahead[0] == args:
            raw = ahead[1].result()
        else:
            raw = self._call(args, kwargs)[1]
        self.sim_config = raw.get("sim")
        return measurements(raw), raw

    def _simulation(self):
        return self._request(None, self.sim, f"{self.name} (simulated)", None, self.sim_overrides)

    def _call(self, args, kwargs):
        if self.handle is None:
            raw = _worker.call(WORKLOAD, args, **kwargs)
        else:
            raw = self.handle._follow(_worker.Job(WORKLOAD, args, **kwargs))
        return measurements(raw), raw

    def _request(self, events, sim, what, scratch, overrides):
        """A worker call's args and keyword arguments."""
        args = {
            "name": self.name,
            "params": {**self.params, **overrides},
            "events": events,
            "sim": sim,
            "cwd": scratch.path if scratch else None,
            "cpu_type": self.cpu_type,
        }
        kwargs = dict(
            timeout=self.timeout,
            address_space=self.address_space,
            what=what or self.name,
            on_progress=self.progress,
        )
        return args, kwargs

    def result(self, measurements_, claims, notes=(), text="", summary=(), figure=None):
        w = _workloads.workload(self.name)
        shown = {k: w.params[k].shown(v) for k, v in self.params.items()}
        return Result(
            self.name,
            shown,
            self.environment,
            measurements_,
            claims,
            list(notes) + assumed_notes(self.sim_config) + [self.pin_note] * bool(self.pin_note),
            text,
            summary,
            figure,
        )


def measurements(raw):
    """Measured objects from a worker's raw regions and values, merged by label in order."""
    by_label = {}
    for region in raw["regions"]:
        m = by_label.setdefault(region["label"], Measured(region["label"]))
        for name, d in region["metrics"].items():
            m.add(Reading.from_dict(name, d))
    for v in raw["values"]:
        m = by_label.setdefault(v["label"], Measured(v["label"]))
        m.add(Reading(v["name"], v["value"], v["source"], v["unit"]))
    return list(by_label.values())


def assumed_notes(sim_config):
    """A note per simulated level or TLB whose geometry the machine did not report."""
    if not sim_config:
        return []
    parts = {**sim_config["levels"], **sim_config["tlbs"]}
    guessed = [
        f"{name} ({format_size(g['size'])}, {g['ways']}-way)"
        if "size" in g
        else f"{name} ({g['entries']} entries, {g['ways']}-way)"
        for name, g in parts.items()
        if g["origin"] == ASSUMED
    ]
    if not guessed:
        return []
    it = "it" if len(guessed) == 1 else "them"
    return [
        f"simulated with an assumed {', '.join(guessed)}: this machine does not report {it} "
        "(pagelab doctor lists what it does report)"
    ]


def check_budget(name, resident, budget):
    if budget["bytes"] is not None and resident > budget["bytes"]:
        raise BudgetExceeded(
            f"{name} needs {format_size(resident)} but this machine's memory budget is "
            f"{format_size(budget['bytes'])} ({budget['fraction']:.0%} of the least of "
            "MemAvailable, the cgroup limit and RLIMIT_AS); choose smaller parameters"
        )


def _core_type(mod, cpu_type):
    """The core type a run is pinned to, and the note that says so: the one asked for; or, on a
    machine with several core types, for an experiment whose claims need one kind of core
    (``ONE_CORE_TYPE`` says why), the type of the CPU whose caches set its sizes."""
    if cpu_type is not None:
        _pmus.host_cpus(cpu_type)  # BadInput now, before anything runs
        return cpu_type, f"ran and counted on {cpu_type} cores only (cpu_type={cpu_type})"
    why = getattr(mod, "ONE_CORE_TYPE", None)
    if why is None or not _pmus.heterogeneous(_pmus.core()):
        return None, None
    cpu = _caches.described_cpu()
    pmu = _pmus.holding(cpu) if cpu is not None else None
    if pmu is None:
        return None, None
    return pmu.name, f"ran on {pmu.name} cores only (CPU {cpu}'s caches set the sizes; {why})"


def _context(name, sim, timeout, progress, params, cpu_type=None):
    """Everything decided before anything runs, each once: the parameters validated and their
    automatic values resolved against one reading of the memory budget, the budget checked,
    and the simulator's configuration built and checked (BadInput / BudgetExceeded here)."""
    if sim not in (None, True, False):
        raise BadInput(f"sim must be True, False or None, not {quote(sim)}")
    _progress.check(progress)
    if timeout is not None:
        _worker.check_timeout(timeout)
    given = _workloads.validate(name, params)
    mod = _module(name)
    budget = env.memory_budget()
    resolve = getattr(mod, "resolve", None)
    p = resolve(given, budget) if resolve else dict(given)
    resident, address_space = mod.memory(p)
    check_budget(name, resident, budget)
    has_sim = _workloads.workload(name).has_sim
    if sim is None:
        sim = has_sim and profile() != "full"
    spec, overrides = mod.simulation(p) if sim and has_sim else (None, {})
    config = _sim_config(spec) if sim and has_sim else None
    timeout = timeout or mod.TIMEOUT
    pinned, note = _core_type(mod, cpu_type)
    ctx = Context(name, p, given, budget, config, timeout, progress, address_space, mod)
    ctx.cpu_type, ctx.pin_note, ctx.sim_overrides = pinned, note, overrides
    return ctx


def _sim_config(spec):
    """The simulated run's configuration (SimConfig.to_dict) for a module's spec: this
    machine's geometry with its overrides, checked here; the experiments report the first
    level's miss classes only, so the other levels are not classified (a hash lookup per
    access that nobody reads)."""
    config = make_config(spec)
    if config.classify is True:
        config = replace(config, classify="l1")
    return config.to_dict()


def run(name, *, sim=None, timeout=None, progress=True, watch=None, cpu_type=None, **params):
    """Run experiment ``name`` with ``params`` (see ``pagelab.parameters(name)``) and return its
    Result: labelled measurements and the claims of its write-up evaluated on them.

    ``sim``: True also runs the simulated build of the workload (where one exists), False never
    does, None (the default) does where the hardware cannot count caches and TLBs (the
    software-only and blocked profiles). Simulated counts are always labelled 'sim'. Bad
    parameters and requests over the memory budget raise BadInput before anything runs.
    ``progress``: True shows a progress bar (tqdm.auto), None nothing; a function gets each step.
    ``watch``: a function given the run's RunHandle before the run is waited for, e.g. to show
    a live view of its workers (``pagelab.run(live=True)`` passes one).
    ``cpu_type``: on a hybrid or big.LITTLE machine, run and count on that core type only (a
    core PMU's name, as ``pagelab doctor`` lists them); experiments whose claims need one kind
    of core pick one themselves and say so in their notes.
    """
    with _caches.once():
        ctx = _context(name, sim, timeout, progress, params, cpu_type)
        with _progress.reporting(name, progress) as ctx.progress:
            if watch is None:
                return ctx.module.run(ctx)
            handle = RunHandle(ctx)
            watch(handle)
            return handle.result()


def start(name, *, sim=None, timeout=None, progress=None, cpu_type=None, **params):
    """Start experiment ``name`` in the background and return its RunHandle at once (bad
    parameters still raise here). Watch it with ``pagelab.LiveCounters.watch(handle)``.
    ``progress`` is None or a function (called from the background thread), never a bar."""
    if progress is True:
        raise BadInput("start() runs in the background: progress must be None or a function")
    return RunHandle(_context(name, sim, timeout, progress, params, cpu_type))


class RunHandle(_worker.Background):
    """An experiment running in the background: ``pid`` (its current worker, or None between
    workers), ``done()``, ``result()`` (the Result, or the run's error; Ctrl-C while waiting
    stops the worker) and ``cancel()`` (its current worker is killed and no further one starts)."""

    def __init__(self, ctx):
        self.name = ctx.name
        ctx.handle = self
        self._job = None
        super().__init__(lambda: ctx.module.run(ctx))

    def _follow(self, job):
        if self._cancelled:
            job.cancel()
        self._job = job
        return job.result()

    @property
    def pid(self):
        job = self._job
        return job.pid if job is not None and not job.done() else None

    def _stop(self):
        if self._job is not None:
            self._job.cancel()

    def __str__(self):
        state = "finished" if self.done() else f"worker pid {self.pid}"
        return f"{self.name} ({state})"


def run_all(progress=True):
    """Every experiment with its default (small) parameters. One that cannot fit this machine's
    limits (the memory budget, RLIMIT_AS) is reported as not run, with the reason, and the rest
    still run."""
    _progress.check(progress)
    contexts, results = [], {}
    for name in experiment_names():
        try:
            contexts.append(_context(name, None, None, progress, {}))
        except BudgetExceeded as e:
            results[name] = not_run(name, str(e))
    _simulate_ahead([ctx for ctx in contexts if ctx.sim], progress)
    for ctx in contexts:
        if callable(progress):
            progress(f"running {ctx.name}")
        with _progress.reporting(ctx.name, progress) as ctx.progress:
            results[ctx.name] = ctx.module.run(ctx)
    return [results[name] for name in experiment_names()]


def not_run(name, reason):
    """The Result of an experiment that could not run here: no measurements, and why."""
    p = _workloads.validate(name, {})
    w = _workloads.workload(name)
    shown = {k: w.params[k].shown(v) for k, v in p.items()}
    return Result(name, shown, environment(), [], [], not_run=reason)


def _simulate_ahead(contexts, progress):
    """Run the simulated builds of ``contexts`` before any native run, as many at once as there
    are CPUs and the memory budget allows, and leave each finished Job in its ctx.ahead. A
    model's counts do not depend on what else runs, and no native measurement runs beside
    them, so nothing measured changes; the simulated runs stop costing one after the other."""
    if not contexts:
        return
    if callable(progress):
        progress("simulating " + ", ".join(ctx.name for ctx in contexts) + " first")
    cpus = len(os.sched_getaffinity(0))
    budget = env.memory_budget()["bytes"]
    pending, running = list(contexts), []
    try:
        while pending or running:
            running = [(ctx, need) for ctx, need in running if not ctx.ahead[1].done()]
            while pending and len(running) < cpus:
                need = pending[0].module.memory(pending[0].params)[0]
                if running and budget is not None and need + sum(n for _, n in running) > budget:
                    break
                ctx = pending.pop(0)
                args, kwargs = ctx._simulation()
                ctx.ahead = (args, _worker.Job(WORKLOAD, args, **{**kwargs, "on_progress": None}))
                running.append((ctx, need))
            time.sleep(0.05)
    except BaseException:  # Ctrl-C: no simulated run outlives run_all
        for ctx in contexts:
            if ctx.ahead is not None:
                ctx.ahead[1].cancel()
        raise


def parameters(name):
    """The parameters of an experiment: name -> Param (default, range, unit, help)."""
    return dict(_workloads.workload(name).params)
