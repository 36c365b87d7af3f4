"""Environment readers, fed fake /proc and /sys trees through their root argument."""

import errno

import pytest

from pagelab.counters.reasons import Facts, explain
from pagelab.machine import environment as env

GIB = 1 << 30


def write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture
def fake(tmp_path):
    write(tmp_path, "proc/sys/kernel/osrelease", "6.1.0-test\n")
    write(tmp_path, "proc/sys/kernel/perf_event_paranoid", "3\n")
    write(
        tmp_path,
        "proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse2 hypervisor avx\n",
    )
    write(tmp_path, "sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n")
    write(
        tmp_path,
        "proc/self/maps",
        "55d0-55d1 r--p 00000000 08:01 42 /usr/bin/cat\n"
        "ffffffffff600000-ffffffffff601000 r-xp 00000000 00:00 0                  [vsyscall]\n",
    )
    write(tmp_path, "proc/cmdline", "ro quiet vsyscall=emulate\n")
    write(tmp_path, "proc/self/status", "Name:\tcat\nCapEff:\t0000004000200000\nSeccomp:\t2\n")
    write(tmp_path, "proc/meminfo", "MemTotal: 16000000 kB\nMemAvailable:    8388608 kB\n")
    return tmp_path


def test_basic_facts(fake):
    """Kernel, CPU, hypervisor flag, paranoid level and THP mode come from their files."""
    assert env.kernel_release(fake) == "6.1.0-test"
    assert env.cpu_model(fake) == "Test CPU 9000"
    assert env.hypervisor(fake) is True
    assert env.perf_event_paranoid(fake) == 3
    assert env.thp_mode(fake) == "never"


def test_missing_files_give_none_not_guesses(tmp_path):
    """An empty tree yields None for every fact rather than a default that looks real."""
    for reader in (
        env.kernel_release,
        env.cpu_model,
        env.hypervisor,
        env.perf_event_paranoid,
        env.thp_mode,
        env.vsyscall_mode,
        env.seccomp_mode,
        env.capabilities,
        env.mem_available,
        env.cgroup_memory_limit,
    ):
        assert reader(tmp_path) is None, reader.__name__


@pytest.mark.parametrize(
    "line, mode",
    [
        ("ffffffffff600000-ffffffffff601000 r-xp 00000000 00:00 0 [vsyscall]", "emulate"),
        ("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]", "xonly"),
        ("7ffc0000-7ffc1000 r-xp 00000000 00:00 0 [vdso]", "none"),
    ],
)
def test_vsyscall_mode_from_the_mapping(tmp_path, line, mode):
    """The [vsyscall] mapping's permissions decide emulate / xonly; no mapping means none."""
    write(tmp_path, "proc/self/maps", line + "\n")
    assert env.vsyscall_mode(tmp_path) == mode


def test_vsyscall_boot_parameter(fake, tmp_path):
    """vsyscall= on the kernel command line is reported; absent means the kernel default."""
    assert env.vsyscall_cmdline(fake) == "emulate"
    write(tmp_path, "proc/cmdline", "ro quiet\n")
    assert env.vsyscall_cmdline(tmp_path) is None


def test_status_fields(fake):
    """Seccomp mode and effective capabilities are decoded from /proc/self/status."""
    assert env.seccomp_mode(fake) == "filter"
    # bit 21 = SYS_ADMIN, bit 38 = PERFMON
    assert env.capabilities(fake) == ["SYS_ADMIN", "PERFMON"]


def test_cgroup_v2_takes_the_tightest_ancestor(tmp_path):
    """A cgroup v2 limit set on a parent applies to the child, and 'max' means none."""
    write(tmp_path, "proc/self/cgroup", "0::/user.slice/lab/session\n")
    write(tmp_path, "sys/fs/cgroup/user.slice/lab/session/memory.max", "max\n")
    write(tmp_path, "sys/fs/cgroup/user.slice/lab/memory.max", f"{2 * GIB}\n")
    write(tmp_path, "sys/fs/cgroup/user.slice/memory.max", f"{8 * GIB}\n")
    assert env.cgroup_memory_limit(tmp_path) == 2 * GIB


def test_cgroup_v2_namespaced_path_falls_back_to_mount_root(tmp_path):
    """Inside a cgroup namespace the listed path may not exist; the mount's root file counts."""
    write(tmp_path, "proc/self/cgroup", "0::/kubepods/pod42/c1\n")
    write(tmp_path, "sys/fs/cgroup/memory.max", f"{GIB}\n")
    assert env.cgroup_memory_limit(tmp_path) == GIB


def test_cgroup_v1_limit_and_its_no_limit_sentinel(tmp_path):
    """cgroup v1 memory.limit_in_bytes is read; its ~2**63 'unlimited' value is not a limit."""
    write(tmp_path, "proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/lab\n")
    write(tmp_path, "sys/fs/cgroup/memory/lab/memory.limit_in_bytes", f"{3 * GIB}\n")
    assert env.cgroup_memory_limit(tmp_path) == 3 * GIB
    write(tmp_path, "sys/fs/cgroup/memory/lab/memory.limit_in_bytes", "9223372036854771712\n")
    assert env.cgroup_memory_limit(tmp_path) is None


def test_memory_budget_is_a_fraction_of_the_smallest_limit(fake):
    """The budget is BUDGET_FRACTION of min(MemAvailable, cgroup limit, RLIMIT_AS)."""
    write(fake, "proc/self/cgroup", "0::/\n")
    write(fake, "sys/fs/cgroup/memory.max", f"{4 * GIB}\n")
    b = env.memory_budget(fake, rlimit=16 * GIB)
    assert b["mem_available"] == 8 * GIB
    assert b["bytes"] == int(env.BUDGET_FRACTION * 4 * GIB)
    assert env.memory_budget(fake, rlimit=GIB)["bytes"] == int(env.BUDGET_FRACTION * GIB)


def test_this_machine_has_sane_facts():
    """The real machine's readers return plausible values (this is what doctor shows); a kernel
    built without perf events, or a sandbox such as gVisor, has no perf_event_paranoid at all."""
    assert env.kernel_release()
    assert env.perf_event_paranoid() is None or env.perf_event_paranoid() >= -1
    assert env.vsyscall_mode() in ("emulate", "xonly", "none")
    assert env.memory_budget()["bytes"] > 0


@pytest.mark.parametrize(
    "err, source, facts, expect",
    [
        (errno.ENOENT, "hw", Facts(2, "disabled", (), True), "no PMU"),
        (errno.EOPNOTSUPP, "hw", Facts(2, "disabled", (), False), "no such event"),
        (errno.ENOENT, "sw", Facts(2, "disabled", (), True), "no such software event"),
        (errno.EACCES, "sw", Facts(2, "filter", (), False), "seccomp"),
        (errno.EACCES, "hw", Facts(3, "disabled", (), False), "perf_event_paranoid=3"),
        (errno.EPERM, "hw", Facts(2, "disabled", ("PERFMON",), False), "CAP_PERFMON is held"),
        (errno.EACCES, "sw", Facts(4, "disabled", ("PERFMON",), False), "without CAP_SYS_ADMIN"),
        (errno.EACCES, "hw", Facts(3, "disabled", ("SYS_ADMIN",), False), "CAP_SYS_ADMIN is held"),
        (errno.EINVAL, "hw", Facts(2, "disabled", (), False), "configuration"),
        (errno.EMFILE, "sw", Facts(2, "disabled", (), False), "too many open files"),
    ],
)
def test_errno_decoding(err, source, facts, expect):
    """Each errno maps to a cause naming the real obstacle, with its errno code and a fix."""
    r = explain(err, source, facts)
    assert expect in r.cause
    assert r.code == errno.errorcode[err]
    assert r.fix
    # at a distribution's level (Debian 3, Ubuntu 4) CAP_PERFMON is not what helps
    if facts.paranoid is not None and facts.paranoid >= 3 and "without" in r.cause:
        assert "CAP_PERFMON is not enough" in r.fix
