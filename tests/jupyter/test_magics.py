"""`%load_ext pagelab` in a real ipykernel, driven through jupyter_client: every magic, and %%c
with good code, a compile error, a segfault, an endless loop and a memory hog. The kernel must
survive each. Also in the blocked profile: the kernel runs under the seccomp launcher."""

import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers import Kernel

POINTER_CHASE = r"""
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 18)

int main(void)
{
    size_t *next = malloc(N * sizeof *next);
    if (!next)
        return 1;
    for (size_t i = 0; i < N; i++)
        next[i] = (i * 4099 + 1) % N;
    size_t p = 0;
    PL_REGION_BEGIN();
    for (int i = 0; i < 200000; i++)
        p = PL_LOAD(&next[p]);
    PL_REGION_END();
    PL_KEEP(p);
    printf("chase ended at %zu\n", p);
    free(next);
    return 0;
}
"""


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    assert k.run("%load_ext pagelab")["status"] == "ok"
    yield k
    k.stop()


@pytest.fixture(scope="module")
def blocked_kernel(tools_dir):
    """A kernel whose process (and so its workers) cannot call perf_event_open: seccomp."""
    spec = Path(tempfile.mkdtemp(prefix="pagelab-kernelspec-"))
    (spec / "noperf").mkdir()
    argv = [str(tools_dir / "pl-noperf"), sys.executable, "-m", "ipykernel_launcher"]
    (spec / "noperf" / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [*argv, "-f", "{connection_file}"],
                "display_name": "pagelab blocked",
                "language": "python",
            }
        )
    )
    k = Kernel(spec, "noperf")
    assert k.run("%load_ext pagelab")["status"] == "ok"
    yield k
    k.stop()


def _number(text, name):
    m = re.search(rf"^{re.escape(name)}: ([0-9,]+) \((\w+)", text, re.M)
    assert m, text
    return int(m.group(1).replace(",", "")), m.group(2)


@pytest.mark.slow
def test_counters_magic_counts_the_cell_and_states_its_overhead(kernel):
    """%%counters counts the cell's page faults with their source, prints the overhead of an
    empty cell, and -o returns the Measurement."""
    out = kernel.run(
        "%%counters -e page-faults -o\n"
        "import mmap\n"
        "with mmap.mmap(-1, 16 << 20) as m:  # fresh pages, never touched before\n"
        "    for off in range(0, len(m), 4096):\n"
        "        m[off] = 1\n"
    )
    assert out["status"] == "ok", out
    faults, source = _number(out["stdout"], "page-faults")
    assert source == "sw" and faults >= 4096 * 0.9
    assert "overhead (an empty cell" in out["stdout"]
    assert any("page-faults" in d.get("text/plain", "") for d in out["data"])


@pytest.mark.slow
def test_counters_live_shows_the_widget(kernel):
    """%%counters --live displays a LiveCounters widget while the cell runs."""
    out = kernel.run("%%counters --live -e page-faults\nb = bytearray(4 << 20)")
    assert out["status"] == "ok", out
    assert any("application/vnd.jupyter.widget-view+json" in d for d in out["data"])
    assert "LiveCounters(" in next(d["text/plain"] for d in out["data"])


@pytest.mark.slow
def test_maps_magic_shows_table_and_figure(kernel):
    """%maps prints the kernel's memory map as a table and shows a plotly figure."""
    out = kernel.run("%maps")
    assert out["status"] == "ok", out
    assert re.search(r"\bheap\b", out["stdout"]) and re.search(r"\bstack\b", out["stdout"])
    assert any("application/vnd.plotly.v1+json" in d for d in out["data"])


@pytest.mark.slow
def test_pagelab_doctor_magic(kernel):
    """%pagelab doctor prints the profile like `pagelab doctor`; other words are a usage error."""
    out = kernel.run("%pagelab doctor")
    assert out["status"] == "ok" and out["stdout"].startswith("profile: ")
    bad = kernel.run("%pagelab frobnicate")
    assert "usage: %pagelab doctor" in (bad["error"] or bad["stderr"])


AUTOCOUNT = re.compile(r"^pagelab: (.*) \[hooks' own cost, not subtracted: (.*)\]$", re.M)


def _autocount(text, name):
    """(value, source) of ``name`` in the autocount line printed in ``text``."""
    m = AUTOCOUNT.search(text)
    assert m, text
    found = re.search(rf"\b{re.escape(name)} ([0-9,.]+)(?: [a-z]+)? \(([\w+: ]+)\)", m.group(1))
    assert found, m.group(1)
    return float(found.group(1).replace(",", "")), found.group(2)


@pytest.mark.slow
def test_autocount_prints_counts_under_every_cell_until_turned_off(kernel):
    """%pagelab autocount on prints one line under each later cell with minflt (>= 90% of the
    pages the cell touched), page faults and task-clock with sources and the hooks' stated
    cost; %pagelab autocount off removes the hooks."""
    on = kernel.run("%pagelab autocount on")
    assert on["status"] == "ok" and "autocount on" in on["stdout"], on
    try:
        out = kernel.run("b = bytearray(32 << 20)")
        minflt, source = _autocount(out["stdout"], "minflt")
        assert source == "rusage" and minflt >= 8192 * 0.9
        faults, source = _autocount(out["stdout"], "page-faults")
        assert source in ("sw", "rusage: minflt+majflt") and faults >= 8192 * 0.9
        _autocount(out["stdout"], "task-clock")
        assert "page-faults" in AUTOCOUNT.search(out["stdout"]).group(2)
        assert AUTOCOUNT.search(kernel.run("x = 1")["stdout"])
    finally:
        off = kernel.run("%pagelab autocount off")
    assert off["status"] == "ok" and not AUTOCOUNT.search(off["stdout"])
    assert not AUTOCOUNT.search(kernel.run("y = 2")["stdout"])


@pytest.mark.slow
def test_c_magic_measures_and_simulates_a_pointer_chase(kernel):
    """%%c runs the student's pointer chase: its output, measured readings with sources, and the
    simulator's counts of the same region side by side."""
    out = kernel.run("%%c\n" + POINTER_CHASE)
    assert out["status"] == "ok", out
    text = out["stdout"]
    assert "chase ended at" in text
    assert "PL_REGION_BEGIN..END, compiled -O2; main() returned 0" in text
    row = next(l for l in text.splitlines() if l.strip().startswith("L1-dcache-loads"))
    assert row.split()[-2:] == ["200,000", "(sim)"]  # one simulated load per hop, no more
    assert re.search(r"task-clock\s+([0-9.,]+ ms \(sw\)|n/a)", text), text
    assert re.search(r"elapsed\s+[0-9.]+ s \(clock\)", text)


@pytest.mark.slow
def test_c_magic_output_option_returns_the_result_shown_once(kernel):
    """%%c -o returns the CellResult (a later cell reads its stdout and readings), and its table
    shows once, as the cell's value, not printed as well."""
    cell = '#include <stdio.h>\nint main(void)\n{\n    puts("41");\n    return 0;\n}\n'
    out = kernel.run("%%c --no-sim -o\n" + cell)
    assert out["status"] == "ok", out
    assert out["stdout"] == "41\n"
    shown = [d["text/plain"] for d in out["data"] if "text/plain" in d]
    assert len(shown) == 1 and "main() returned 0" in shown[0], out
    got = kernel.run("print(int(_.stdout) + 1, _['minflt'].source)")
    assert got["stdout"] == "42 rusage\n", got


@pytest.mark.slow
def test_c_magic_compile_error_shows_the_compiler_with_cell_lines(kernel):
    """A compile error comes back as the compiler's message at the cell's own line number."""
    out = kernel.run("%%c\nint main(void)\n{\n    return undeclared_thing;\n}\n")
    assert out["status"] == "ok" and out["error"] is None
    said = r"(.undeclared_thing. undeclared|undeclared identifier .undeclared_thing)"
    assert re.search(rf"cell:3:\d+: error: .*{said}", out["stderr"])
    assert kernel.alive()


@pytest.mark.slow
@pytest.mark.parametrize(
    "options,body,says",
    [
        ("", "*(volatile int *)0 = 1;", "crashed with SIGSEGV"),
        ("--timeout 2", "for (;;)\n        ;", "ran longer than 2 s and was stopped"),
        (
            "--mem 64",
            # PL_KEEP: clang drops a block that is written and never read, malloc included
            "for (char *p;;) {\n        p = memset(malloc(1 << 20), 1, 1 << 20);\n"
            "        PL_KEEP(p);\n    }",
            "memory limit, --mem 64 MiB",
        ),
    ],
    ids=["segfault", "endless-loop", "memory-hog"],
)
def test_c_magic_failure_is_one_line_and_the_kernel_survives(kernel, options, body, says):
    """A segfault, an endless loop (stopped at --timeout) or a memory hog (stopped at its --mem
    limit in its own worker) ends the worker with one line saying so; the kernel carries on."""
    head = "#include <stdlib.h>\n#include <string.h>\nint main(void)\n{\n    "
    out = kernel.run(f"%%c {options}\n{head}{body}\n}}\n")
    lines = out["stderr"].strip().splitlines()
    assert len(lines) == 1 and says in lines[0], out
    assert kernel.alive()


@pytest.mark.slow
def test_run_live_shows_the_widget_and_returns_the_result(kernel):
    """pagelab.run(..., live=True) displays a LiveCounters on the run and returns its Result."""
    out = kernel.run(
        "import pagelab\n"
        "r = pagelab.run('first-touch', size_mb=8, threads=1, rounds=2, live=True)\n"
        "print(r.experiment)"
    )
    assert out["status"] == "ok", out
    assert any("application/vnd.jupyter.widget-view+json" in d for d in out["data"])
    assert out["stdout"].strip().endswith("first-touch")


@pytest.mark.slow
def test_interrupting_the_kernel_stops_a_watched_worker(kernel):
    """A kernel interrupt while a cell waits on a background worker stops the worker with one
    Interrupted line, and the kernel carries on."""
    out = kernel.run(
        "from pagelab.native import worker as _worker\n"
        "import time\n"
        "job = _worker.Job('pagelab.native.worker:selftest', dict(mode='hold', seconds=120,"
        " mib=1))\n"
        "while job.pid is None:\n"
        "    time.sleep(0.05)\n"
        "print(job.pid)"
    )
    pid = int(out["stdout"])
    for _ in range(5):  # an interrupt that lands just before result() waits is retried
        # no flush=True: ipykernel's flush blocks the main thread until the message is out, so
        # the interrupt would find it still in print(); the IO thread sends it on its own soon
        msg_id = kernel.kc.execute("print('waiting'); job.result()")
        while True:  # until the cell has printed, i.e. it is (about to be) waiting in result()
            msg = kernel.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                break
        kernel.km.interrupt_kernel()
        reply = kernel.kc.get_shell_msg(timeout=60)
        assert reply["content"]["status"] == "error"
        if reply["content"]["ename"] != "KeyboardInterrupt":
            break
    assert reply["content"]["ename"] == "Interrupted"
    assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
    assert kernel.alive()


def _zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.slow
def test_unload_removes_the_magics():
    """%unload_ext pagelab removes %%c and friends (IPython's extension protocol)."""
    k = Kernel()
    try:
        assert k.run("%load_ext pagelab\n%unload_ext pagelab")["status"] == "ok"
        out = k.run("%%c\nint main(void) { return 0; }")
        assert out["status"] == "error" and "Cell magic `%%c` not found" in out["stderr"]
    finally:
        k.stop()


@pytest.mark.slow
def test_blocked_profile_counters_and_c_cell_fall_back_with_labels(blocked_kernel):
    """Under seccomp %%counters shows page faults from rusage, labelled, and %%c still gives
    the simulator's counts beside clock and rusage readings."""
    out = blocked_kernel.run("%%counters -e page-faults\nb = bytearray(16 << 20)")
    assert out["status"] == "ok", out
    assert "page-faults: not available here" in out["stdout"] and "seccomp" in out["stdout"]
    assert re.search(r"minflt\+majflt: [0-9,]+ \(rusage\)", out["stdout"])
    out = blocked_kernel.run("%%c\n" + POINTER_CHASE)
    assert out["status"] == "ok", out
    text = out["stdout"]
    assert re.search(r"page-faults\s+[0-9,]+ \(rusage: minflt\+majflt\)", text), text
    assert "seccomp" in text
    assert re.search(r"L1-dcache-loads\s+-\s+200,000 \(sim\)", text), text
    assert blocked_kernel.run("%pagelab autocount on")["status"] == "ok"
    out = blocked_kernel.run("b = bytearray(16 << 20)")
    blocked_kernel.run("%pagelab autocount off")
    faults, source = _autocount(out["stdout"], "page-faults")
    assert source == "rusage: minflt+majflt" and faults >= 4096 * 0.9
    assert re.search(r"task-clock n/a \([^)]*seccomp", out["stdout"]), out["stdout"]
    assert blocked_kernel.alive()


# main() forks a child that would sleep forever under a name the test can find, then ends as
# told; the comm name is unique per test run (at most 15 characters).
STRAY = f"plstray{os.getpid() % 100000}"


def _forks(ending):
    """A C cell whose main() forks a child that pauses forever under the name STRAY."""
    return (
        "#include <sys/prctl.h>\n#include <unistd.h>\n"
        "int main(void)\n{\n"
        f'    if (fork() == 0) {{\n        prctl(PR_SET_NAME, "{STRAY}");\n'
        "        for (;;)\n            pause();\n    }\n"
        f"    {ending}\n}}\n"
    )


def _strays():
    """The live (not zombie) processes named STRAY."""
    out = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == STRAY:
                state = (comm.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    out.append(int(comm.parent.name))
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def _until_none_left(timeout=10):
    deadline = time.monotonic() + timeout
    while (left := _strays()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.mark.slow
@pytest.mark.parametrize(
    "options,ending,says",
    [
        ("", "return 0;", "note: killed 1 process that main() left running"),
        ("--timeout 1", "for (;;)\n        ;", "ran longer than 1 s and was stopped"),
        ("", "*(volatile int *)0 = 1;", "crashed with SIGSEGV"),
    ],
    ids=["normal-exit", "timeout", "crash"],
)
def test_c_magic_leaves_no_process_behind(kernel, options, ending, says):
    """A child that main() forked is killed when the cell ends, whether main() returned (the
    cell says so in one line), ran out of time or crashed; a crash is never reported as a
    timeout."""
    out = kernel.run(f"%%c {options}\n" + _forks(ending))
    left = _until_none_left()
    text = out["stdout"] + out["stderr"]
    assert says in text, out
    assert text.count(says) == 1 and ("ran longer" in text) == ("timeout" in options), out
    assert not left


@pytest.mark.slow
def test_c_magic_child_dies_on_interrupt_and_on_kernel_shutdown():
    """While main() runs, its forked child dies with the worker when the kernel is interrupted
    and when the kernel is shut down (killed outright, as Jupyter does after a short wait)."""
    k = Kernel()
    try:
        assert k.run("%load_ext pagelab")["status"] == "ok"
        cell = "%%c --timeout 120\n" + _forks("for (;;)\n        ;")
        for how in ("interrupt", "shutdown"):
            msg_id = k.kc.execute(cell)
            deadline = time.monotonic() + 60
            while not _strays():
                assert time.monotonic() < deadline, "the cell's child never started"
                time.sleep(0.05)
            if how == "interrupt":
                k.km.interrupt_kernel()
                said = ""
                while True:  # the cell's output until the kernel is idle again
                    msg = k.kc.get_iopub_msg(timeout=60)
                    if msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    if msg["msg_type"] == "stream":
                        said += msg["content"]["text"]
                    if msg["content"].get("execution_state") == "idle":
                        break
                assert "stopped the C cell worker" in said, said
            else:
                k.stop()
            assert not _until_none_left(), how
    finally:
        if k.km.is_alive():
            k.stop()
