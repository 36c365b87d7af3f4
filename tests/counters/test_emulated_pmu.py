"""pagelab's counting on PMUs this host does not have: the emulated PMU (tests/emupmu/emupmu.c)
answers perf_event_open for a described machine, counting by its stated synthetic rule while the
real scheduler places the thread, so sums, scaling, labels and reasons can be checked exactly."""

import errno
import json
import os
import subprocess
import textwrap

import pytest

from emulated import environment, run_python, write_machine
from helpers import CFLAGS

HYBRID = {
    "cpu_core": (4, "0-7", "general=8 fixed=3 fixed-events=cycles,instructions"),
    "cpu_atom": (10, "8-15", "general=6 fixed=3 fixed-events=cycles,instructions"),
}


def _two_cpus():
    """Two CPUs this process may run on (one standing for a P-core, one for an E-core)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip(f"moving a thread between core types needs two CPUs; this process has {cpus}")
    return cpus[0], cpus[1]


def _hybrid(tmp_path, **kw):
    a, b = _two_cpus()
    return write_machine(tmp_path, HYBRID, host_cpus=f"{a}=0 {b}=8", **kw), a, b


# A child that counts `events` on itself: pinned to CPU a, busy for `first` s of its own CPU
# time, then moved to CPU b and busy for `second` s; it prints the raw counts, the readings and
# the time it spent on each CPU.
COUNT_MOVED = textwrap.dedent(
    """
    import json, os, sys, time
    import pagelab
    events, a, b, first, second, rdpmc = json.loads(sys.argv[1])
    def busy(s):
        t = time.thread_time()
        while time.thread_time() - t < s:
            pass
        return time.thread_time() - t
    os.sched_setaffinity(0, {a})
    with pagelab.CounterGroup(events, rdpmc=rdpmc) as g:
        g.enable()
        before = g.read()
        on_a = busy(first)
        os.sched_setaffinity(0, {b})
        on_b = busy(second)
        after = g.read()
        readings = {r.name: r.to_dict() for r in g.readings(before, after)}
        status = {s.event.name: [(p.pmu, p.slot) for p in s.parts] for s in g.status}
    print(json.dumps({
        "readings": readings, "status": status, "on_a": on_a, "on_b": on_b,
        "before": [before.values, before.enabled, before.running],
        "after": [after.values, after.enabled, after.running], "rdpmc": after.via_rdpmc,
    }))
    """
)


def _count_moved(so, machine, events, a, b, first=0.2, second=0.1, rdpmc=False):
    args = json.dumps([events, a, b, first, second, rdpmc])
    return run_python(COUNT_MOVED, environment(so, machine), args)


def _deltas(out, slot):
    (v0, e0, r0), (v1, e1, r1) = out["before"], out["after"]
    return v1[slot] - v0[slot], e1[slot] - e0[slot], r1[slot] - r0[slot]


def test_a_thread_moved_between_core_types_counts_on_both(emulated_pmu, tmp_path):
    """A thread pinned to a P-core CPU, then moved to an E-core CPU: cycles has a part for
    each core type, the total is exactly their sum, unscaled, each part follows the time spent
    there, and the readings are labelled emulated."""
    machine, a, b = _hybrid(tmp_path)
    # P-core first: the parts are read in slot order (cpu_core first), so each read of a part
    # sees all the time the other part had (the reverse move reads a hair of scaling)
    out = _count_moved(emulated_pmu, machine, ["cycles", "task-clock", "page-faults"], a, b)
    cycles = out["readings"]["cycles"]
    assert cycles["source"] == "emulated" and not cycles.get("scaled")
    parts = cycles["parts"]
    assert set(parts) == {"cpu_core", "cpu_atom"} and min(parts.values()) > 0
    assert cycles["value"] == sum(parts.values())
    # the rule: cycles = ns on a counter, and each part ran while the thread was on its CPUs
    core_ns, atom_ns = parts["cpu_core"], parts["cpu_atom"]
    assert core_ns / 1e9 == pytest.approx(out["on_a"], rel=0.1, abs=0.005)
    assert atom_ns / 1e9 == pytest.approx(out["on_b"], rel=0.1, abs=0.005)
    assert out["readings"]["task-clock"]["source"] == "sw"
    assert out["readings"]["page-faults"]["source"] == "sw"
    assert "parts" not in out["readings"]["page-faults"]


def test_raw_counts_follow_the_stated_rule(emulated_pmu, tmp_path):
    """Each part's time_enabled is the thread's whole time, time_running its time on that core
    type, and its value running x (1 + the event's index in events.c): instructions 2x."""
    machine, a, b = _hybrid(tmp_path)
    out = _count_moved(emulated_pmu, machine, ["instructions"], a, b)
    (core_slot, atom_slot) = [slot for _, slot in out["status"]["instructions"]]
    cv, ce, cr = _deltas(out, core_slot)
    av, ae, ar = _deltas(out, atom_slot)
    assert (cv, av) == (2 * cr, 2 * ar)
    assert cr + ar >= max(ce, ae) > 0  # read one after the other, the later sees a bit more
    assert out["readings"]["instructions"]["value"] == cv + av


def test_more_events_than_counters_multiplex_and_are_scaled(emulated_pmu, tmp_path):
    """Three events on a PMU with two general counters, one of them the NMI watchdog's: each
    is on a counter a third of the time, and pagelab scales its count by enabled / running."""
    machine = write_machine(tmp_path, {"cpu": (4, None, "general=2 fixed=0")}, watchdog=1)
    a, _ = _two_cpus()
    events = ["cycles", "instructions", "branches"]
    out = _count_moved(emulated_pmu, machine, events, a, a, 0.15, 0.0)
    for name in events:
        ((_, slot),) = out["status"][name]
        value, enabled, running = _deltas(out, slot)
        assert abs(3 * running - enabled) <= 3  # a third of the time, floored
        reading = out["readings"][name]
        assert reading["scaled"] is True
        assert reading["value"] == round(value * enabled / running)


def test_a_pmu_whose_counters_are_all_taken_says_never_on_a_counter(emulated_pmu, tmp_path):
    """One general counter, held by the NMI watchdog: cycles never counts, and pagelab says why,
    naming the watchdog."""
    machine = write_machine(tmp_path, {"cpu": (4, None, "general=1 fixed=0")}, watchdog=1)
    a, _ = _two_cpus()
    out = _count_moved(emulated_pmu, machine, ["cycles"], a, a, 0.05, 0.0)
    reading = out["readings"]["cycles"]
    assert reading["value"] is None
    assert "never on a counter" in reading["reason"] and "NMI watchdog" in reading["reason"]


def test_paranoid_2_without_capabilities_counts_user_space_only(emulated_pmu, tmp_path):
    """At perf_event_paranoid=2 with no capabilities every event needs exclude_kernel: pagelab's
    retry opens each and labels it user-space only."""
    machine, a, b = _hybrid(tmp_path, paranoid=2, capeff="0000000000000000")
    out = _count_moved(emulated_pmu, machine, ["cycles", "page-faults"], a, b, 0.05, 0.05)
    for name in ("cycles", "page-faults"):
        assert out["readings"][name]["kernel_excluded"] is True
        assert out["readings"][name]["value"] is not None


OPEN_ALL = textwrap.dedent(
    """
    import json
    import pagelab
    with pagelab.CounterGroup(EVENTS) as g:
        status = {s.event.name: s.errno for s in g.status}
        c = g.read() if g.opened else None
        readings = {r.name: r.to_dict() for r in g.readings(c, c)}
    print(json.dumps({"errno": status, "readings": readings}))
    """
)


def _open_all(so, machine, events):
    return run_python(OPEN_ALL.replace("EVENTS", repr(events)), environment(so, machine))


@pytest.mark.parametrize("level", [3, 4])
def test_paranoid_3_and_4_deny_every_event_without_cap_sys_admin(emulated_pmu, tmp_path, level):
    """Debian's perf_event_paranoid=3 (and Ubuntu's 4) deny every event to a process without
    CAP_SYS_ADMIN, software ones too, and pagelab's reason names the level."""
    machine = write_machine(tmp_path, HYBRID, paranoid=level, capeff="0000000000000000")
    out = _open_all(emulated_pmu, machine, ["cycles", "page-faults", "task-clock"])
    assert set(out["errno"].values()) == {errno.EACCES}
    for reading in out["readings"].values():
        assert reading["value"] is None
        assert f"perf_event_paranoid={level}" in reading["reason"]


def test_cap_perfmon_is_not_enough_at_paranoid_3(emulated_pmu, tmp_path):
    """Debian's check asks for CAP_SYS_ADMIN itself: CAP_PERFMON alone still gets EACCES, and
    pagelab's reason says which capability it takes; at paranoid 2 CAP_PERFMON opens kernel
    counting too."""
    perfmon = f"{1 << 38:016x}"
    denied = write_machine(tmp_path / "3", HYBRID, paranoid=3, capeff=perfmon)
    out = _open_all(emulated_pmu, denied, ["cycles"])
    assert out["errno"] == {"cycles": errno.EACCES}
    assert "perf_event_paranoid=3 without CAP_SYS_ADMIN" in out["readings"]["cycles"]["reason"]
    allowed = write_machine(tmp_path / "2", HYBRID, paranoid=2, capeff=perfmon)
    out = _open_all(emulated_pmu, allowed, ["cycles"])
    assert out["errno"] == {"cycles": 0} and "kernel_excluded" not in out["readings"]["cycles"]


def test_unsupported_generic_events_get_the_errno_the_machine_gives(emulated_pmu, tmp_path):
    """A generic cache event the CPU's tables lack is ENOENT (or EINVAL, as the file says), and
    pagelab reports it unavailable with that errno while the other events count."""
    pmus = {"cpu": (4, None, "general=6 unsupported=LLC-loads:ENOENT,LLC-load-misses:EINVAL")}
    machine = write_machine(tmp_path, pmus)
    out = _open_all(emulated_pmu, machine, ["LLC-loads", "LLC-load-misses", "cycles"])
    assert out["errno"] == {"LLC-loads": errno.ENOENT, "LLC-load-misses": errno.EINVAL, "cycles": 0}
    assert out["readings"]["LLC-loads"]["reason"].endswith("ENOENT")
    assert out["readings"]["LLC-load-misses"]["reason"].endswith("EINVAL")


def test_no_extended_type_falls_back_to_one_generic_event_on_one_core_type(emulated_pmu, tmp_path):
    """An arm64 kernel without the extended PMU type refuses each per-PMU part (ENOENT); the one
    generic event pagelab opens instead goes where perf_init_event's walk sends it (the core PMU
    registered last, cortex_a76 here), counts only there, and says so."""
    a, b = _two_cpus()
    pmus = {
        "armv8_cortex_a55": (8, "0-3", "general=6 extended-type=no"),
        "armv8_cortex_a76": (9, "4-7", "general=6 extended-type=no"),
    }
    machine = write_machine(tmp_path, pmus, host_cpus=f"{a}=0 {b}=4")
    out = _count_moved(emulated_pmu, machine, ["cycles"], a, b)
    cycles = out["readings"]["cycles"]
    assert out["status"]["cycles"] == [[None, 0]] and "note" in cycles
    _, enabled, running = _deltas(out, 0)
    assert running / 1e9 == pytest.approx(out["on_b"], rel=0.1, abs=0.005)  # the A76 only
    assert enabled > running


def test_an_rdpmc_page_not_on_a_counter_falls_back_to_read(emulated_pmu, tmp_path):
    """With cap_user_rdpmc set but index 0 on the mmap page, pagelab reads with read(2) and
    still counts."""
    pmus = {"cpu": (4, None, "general=4 rdpmc=1")}
    machine = write_machine(tmp_path, pmus)
    a, _ = _two_cpus()
    out = _count_moved(emulated_pmu, machine, ["cycles"], a, a, 0.05, 0.0, rdpmc=True)
    assert out["rdpmc"] is False and out["readings"]["cycles"]["value"] > 0


SEAM = "import pagelab\ntry:\n    pagelab.CounterGroup(['cycles'])\nexcept pagelab.BadInput as e:\n"
SEAM += "    import json; print(json.dumps(str(e)))\n"


def test_the_seam_refuses_an_emulated_pmu_without_a_described_machine(emulated_pmu):
    """$PAGELAB_EMULATED_PMU alone is BadInput: the emulation never counts for the real host."""
    env = {k: v for k, v in os.environ.items() if k != "PAGELAB_MACHINE"}
    env["PAGELAB_EMULATED_PMU"] = str(emulated_pmu)
    assert "without PAGELAB_MACHINE" in run_python(SEAM, env)


def test_the_seam_refuses_a_bad_emulator_path_naming_dlerror(emulated_pmu, tmp_path):
    """A path that is no shared object is BadInput carrying dlerror()'s words."""
    machine = write_machine(tmp_path, HYBRID)
    message = run_python(SEAM, environment(tmp_path / "missing.so", machine))
    assert "missing.so" in message and "cannot open shared object file" in message


# Moves itself from CPU argv[1] to CPU argv[2], touching PAGES fresh pages and spinning on each.
MOVER = r"""
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#define PAGES 1000
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static void run_on(int cpu, double seconds)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    volatile char *p = mmap(0, PAGES * 4096, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < PAGES; i++)
        p[i * 4096] = 1;
    double t0 = cpu_s();
    while (cpu_s() - t0 < seconds)
        ;
}
int main(int argc, char **argv)
{
    run_on(atoi(argv[1]), 0.15);
    run_on(atoi(argv[2]), 0.05);
    return argc == 3 ? 0 : 1;
}
"""


def test_pagelab_stat_of_a_command_that_moves_counts_both_core_types(
    emulated_pmu, tmp_path, pagelab_cmd
):
    """`pagelab stat -e cycles,page-faults` of a command that moves itself from a P-core to an
    E-core shows both parts and their sum, and every page fault on either core type."""
    machine, a, b = _hybrid(tmp_path / "machine")
    (tmp_path / "mover.c").write_text(MOVER)
    mover = tmp_path / "mover"
    subprocess.run(["cc", *CFLAGS, "-o", mover, tmp_path / "mover.c"], check=True)
    env = environment(emulated_pmu, machine)
    cmd = [*pagelab_cmd, "stat", "-e", "cycles,page-faults"]

    def stat(*extra):
        r = subprocess.run(
            [*cmd, *extra, "--", str(mover), str(a), str(b)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=lambda: os.sched_setaffinity(0, {a, b}),  # no time off both core types
        )
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout, r.stderr

    metrics = json.loads(stat("--json")[0])["measurements"][0]["metrics"]
    cycles, faults = metrics["cycles"], metrics["page-faults"]
    assert cycles["source"] == "emulated" and not cycles.get("scaled")
    assert cycles["value"] == sum(cycles["parts"].values())
    core, atom = cycles["parts"]["cpu_core"], cycles["parts"]["cpu_atom"]
    assert 1.5 < core / atom < 6  # 0.15 s on the P-core, 0.05 s on the E-core
    assert faults["source"] == "sw" and "parts" not in faults and not faults.get("scaled")
    assert faults["value"] >= 2000  # 1000 pages touched on each core type
    text = stat()[1]
    assert "cpu_core" in text and "cpu_atom" in text and "emulated" in text


GROUP = textwrap.dedent(
    """
    import json, time
    from pagelab._native import ffi, lib
    g, c = ffi.new("struct pl_group *"), ffi.new("struct pl_counts *")
    # cycles leads, instructions joins its group (perf group 1), branches alone (group 2)
    opened = lib.pl_group_open(g, [0, 0, 0], [0, 1, 4], [1, 1, 2], 3, 0, 0)
    assert lib.pl_group_enable(g) == 0
    t = time.thread_time()
    while time.thread_time() - t < 0.05:
        pass
    assert lib.pl_group_read(g, c) == 0
    lib.pl_group_close(g)
    print(json.dumps([opened, list(c.value[0:3]), list(c.time_enabled[0:3]),
                      list(c.time_running[0:3])]))
    """
)


def test_a_group_member_runs_with_its_leader_at_its_own_rate(emulated_pmu, tmp_path):
    """A member read through its leader's PERF_FORMAT_GROUP read shares the leader's times and
    counts at its own rate (instructions 2x cycles); an event in another group has its own."""
    machine = write_machine(tmp_path, {"cpu": (4, None, "general=4")})
    opened, values, enabled, running = run_python(GROUP, environment(emulated_pmu, machine))
    assert opened == 3 and values[0] > 0
    assert values[1] == 2 * values[0] and values[2] == 5 * running[2]
    assert enabled[0] == enabled[1] and running[0] == running[1] == values[0]
