"""pagelab.callpaths: perf record's kernel call chains through one function, on real programs."""

import os
import shutil
import signal
import subprocess
import time

import pytest

from pagelab import BadInput, callpaths
from pagelab.counters.callpath import parse_script
from pagelab.machine import environment as env

VSYSCALL_LOOP = r"""
#include <stdlib.h>
#include <time.h>
typedef time_t (*time_fn)(time_t *);
int main(int argc, char **argv)
{
    time_fn fn = argv[1][0] == 'v' ? (time_fn)0xffffffffff600400 : time; /* vsyscall or vDSO */
    volatile time_t sink = 0;
    for (long i = atol(argv[2]); i > 0; i--)
        sink += fn(NULL);
    return 0;
}
"""


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """The write-up's test program, built -O2, calling time() through the vsyscall page or vDSO."""
    cc = shutil.which("cc")
    if cc is None or shutil.which("perf") is None:
        pytest.skip("needs a C compiler and the perf tool (linux-perf)")
    if os.geteuid() != 0:
        pytest.skip("kernel call chains need root (or perf_event_paranoid <= 1)")
    if env.vsyscall_mode() in (None, "none"):
        pytest.skip("this kernel maps no vsyscall page")
    work = tmp_path_factory.mktemp("callpath")
    (work / "loop.c").write_text(VSYSCALL_LOOP)
    subprocess.run([cc, "-O2", "-o", str(work / "loop"), str(work / "loop.c")], check=True)
    return str(work / "loop")


def test_vsyscall_calls_run_through_emulate_vsyscall(loop):
    """A vsyscall loop's kernel samples pass emulate_vsyscall, reached from the page-fault entry."""
    paths = callpaths([loop, "v", "500000"], through="emulate_vsyscall")
    assert not paths.reason, paths.reason
    assert paths.samples > 100 and paths.passing > 0
    for chain, _ in paths.chains:
        assert "exc_page_fault" in chain[: chain.index("emulate_vsyscall")], chain
    # the loop does nothing else in the kernel: (nearly) every kernel sample is a page fault's
    assert paths.entries.get("asm_exc_page_fault", 0) >= 0.9 * paths.kernel, paths.entries
    assert "through emulate_vsyscall" in str(paths)
    assert "entered the kernel through: asm_exc_page_fault" in str(paths)


# perf script -F ip,sym,dso with -g: a block per sample, its chain leaf first
SCRIPT = """
\tffffffff81001000 __x64_sys_time+0x5 ([kernel.kallsyms])
\tffffffff81002000 emulate_vsyscall+0x40 ([kernel.kallsyms])
\tffffffff81003000 exc_page_fault+0x70 ([kernel.kallsyms])
\tffffffff81004000 asm_exc_page_fault+0x26 ([kernel.kallsyms])
\t          401136 main+0x16 (/tmp/tpf)

\tffffffff81005000 do_user_addr_fault+0x1e ([kernel.kallsyms])
\tffffffff81003000 exc_page_fault+0x70 ([kernel.kallsyms])
\tffffffff81004000 asm_exc_page_fault+0x26 ([kernel.kallsyms])

\tffffffff81006000 load_elf_binary+0x9 ([kernel.kallsyms])
\tffffffff81007000 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])

\t          401136 main+0x16 (/tmp/tpf)
"""


def test_a_profile_counts_kernel_samples_by_chain_and_by_entry():
    """perf script's blocks give the samples, those with a kernel frame, the chains through the
    function asked about (entry first) and where each kernel sample entered the kernel."""
    samples, kernel, chains, entries = parse_script(SCRIPT, "emulate_vsyscall")
    assert (samples, kernel) == (4, 3)
    chain = ("asm_exc_page_fault", "exc_page_fault", "emulate_vsyscall", "__x64_sys_time")
    assert dict(chains) == {chain: 1}
    assert dict(entries) == {"asm_exc_page_fault": 2, "entry_SYSCALL_64_after_hwframe": 1}


def test_vdso_calls_never_reach_the_emulation(loop):
    """The same loop through the vDSO has no chain through emulate_vsyscall."""
    paths = callpaths([loop, "d", "20000000"], through="emulate_vsyscall")
    assert paths.samples > 0 and paths.passing == 0


def test_a_command_past_its_timeout_is_killed_with_perf():
    """A command running past the timeout ends with its reason, and perf and it are gone."""
    if shutil.which("perf") is None:
        pytest.skip("needs the perf tool (linux-perf)")
    start = time.monotonic()
    paths = callpaths(["sleep", "30"], through="x", timeout=1)
    assert paths.reason == "perf record ran past 1 s"
    assert time.monotonic() - start < 10
    assert "no profile: perf record ran past 1 s" in str(paths)


def _running(argv):
    """The pids whose command line is exactly ``argv``."""
    want = "\0".join(argv) + "\0"
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                if f.read() == want:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_an_interrupt_takes_perf_and_the_command_down():
    """Ctrl-C during the sampling reaches the caller, and the sampled command is gone with perf."""
    if shutil.which("perf") is None:
        pytest.skip("needs the perf tool (linux-perf)")
    argv = ["sleep", "37.25"]  # a command line nothing else runs

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(2)
    try:
        with pytest.raises(KeyboardInterrupt):
            callpaths(argv, through="x", timeout=30)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert _running(argv) == []


@pytest.mark.parametrize(
    "command, through",
    [([], "f"), ("ls", "f"), (["ls"], ""), (["no-such-command-here"], "f")],
)
def test_bad_input_is_refused_before_anything_runs(command, through):
    """An empty or non-list command, an empty function name or a missing program is BadInput."""
    with pytest.raises(BadInput):
        callpaths(command, through)
