"""Traces are read once, as a stream: pipes, FIFOs and /dev/stdin count as files do; huge sizes
are refused; long replays stop at Ctrl-C (issue 8's reproducers)."""

import os
import random
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import run
from pagelab import BadInput, Simulator, cachelab

LAB = ("-s", "4", "-E", "2", "-b", "4")
SMALL = {"l1": "1K:2:64", "l2": None, "llc": None, "dtlb": "8:2", "stlb": None}


def _trace_text(records=200_000):
    """A lackey trace of about 3 MB: larger than the parser's 1 MiB buffer and a pipe's 64 KiB,
    so reading it takes many reads and refills."""
    rng = random.Random(8)
    lines = ["==1== Lackey, an example Valgrind tool"]
    for i in range(records):
        lines.append(f"I  {0x400000 + 4 * i:08x},4")
        lines.append(f" {rng.choice('LSM')} {rng.randrange(1 << 16):x},{rng.randint(1, 8)}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("stream") / "t.trace"
    p.write_text(_trace_text())
    return p


def _unnamed(output, trace):
    """Output with the trace's name (file, /dev/fd/N or /dev/stdin) taken out: counts remain."""
    return re.sub(r"/dev/fd/\d+|/dev/stdin", "TRACE", output.replace(str(trace), "TRACE"))


def _writer(path, data):
    """Write data into a FIFO or pipe path from a thread (open blocks until the reader opens)."""

    def write():
        with open(path, "wb") as f:
            f.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_piped_trace_gives_the_counts_of_the_file(pagelab_cmd, trace):
    """Fault injection: the trace through <(cat FILE) and through /dev/stdin gives exactly the
    file's cache-lab output, in both CLI modes (before, a pipe printed hits:0 and exited 0)."""
    cli = " ".join(pagelab_cmd)
    for mode in (LAB, ("--l1", "1K:2:64", "--l2", "none", "--llc", "none", "--json")):
        args = " ".join(mode)
        from_file = run(["bash", "-c", f"{cli} sim trace {trace} {args}"])
        assert from_file.returncode == 0, from_file.stderr
        piped = run(["bash", "-c", f"{cli} sim trace <(cat {trace}) {args}"])
        with open(trace) as stdin:
            dev_stdin = run([*pagelab_cmd, "sim", "trace", "/dev/stdin", *mode], stdin=stdin)
        for r in (piped, dev_stdin):
            assert r.returncode == 0, r.stderr
            assert _unnamed(r.stdout, trace) == _unnamed(from_file.stdout, trace)
    assert "hits:0 " not in from_file.stdout


def test_api_reads_pipes_as_files(trace):
    """cachelab() and Simulator.replay through a pipe (/dev/fd/N) count what the file counts."""
    data = trace.read_bytes()
    want = cachelab(trace, 4, 2, 4)
    direct = Simulator(SMALL)
    direct.replay(trace)
    for use in ("cachelab", "replay"):
        r, w = os.pipe()
        writer = threading.Thread(target=lambda w=w: (os.write(w, data), os.close(w)))
        writer.start()
        try:
            if use == "cachelab":
                got = cachelab(f"/dev/fd/{r}", 4, 2, 4)
                assert (got.hits, got.misses, got.evictions) == (
                    want.hits,
                    want.misses,
                    want.evictions,
                )
            else:
                s = Simulator(SMALL)
                info = s.replay(f"/dev/fd/{r}")
                assert info.data_records == 200_000
                assert s.stats().levels == direct.stats().levels
                assert s.stats().tlbs == direct.stats().tlbs
        finally:
            writer.join()
            os.close(r)
    assert want.hits + want.misses > 200_000  # M records count twice: the trace was all read


def test_fifo_with_a_writer_gives_the_counts_of_the_file(tmp_path, trace):
    """A FIFO is read once: with one writer it gives the file's counts (before, it hung)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = _writer(fifo, trace.read_bytes())
    got = cachelab(fifo, 4, 2, 4)
    writer.join(timeout=60)
    want = cachelab(trace, 4, 2, 4)
    assert (got.hits, got.misses, got.evictions) == (want.hits, want.misses, want.evictions)


def _wait_until_blocked(pid):
    """Wait until the pagelab process has its extension loaded (so main() handles SIGINT) and
    sleeps (waiting for the FIFO's writer, or for the pipe); False if it never does."""
    for _ in range(600):
        time.sleep(0.05)
        try:
            loaded = "_native" in Path(f"/proc/{pid}/maps").read_text()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        if loaded and state == "S":
            return True
    return False


def _interrupt(cmd, **kw):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    try:
        assert _wait_until_blocked(p.pid)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    return p.returncode, err


def test_fifo_without_a_writer_waits_like_cat_and_ctrl_c_ends_it(pagelab_cmd, tmp_path):
    """A FIFO nobody writes waits for a writer (as cat does) and Ctrl-C ends the wait at once:
    exit 130 and one line, never a hang."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rc, err = _interrupt([*pagelab_cmd, "sim", "trace", str(fifo), *LAB])
    assert rc == 130 and err == "pagelab: interrupted\n"


def test_ctrl_c_stops_an_endless_replay(pagelab_cmd):
    """A replay that would never end (a writer that never stops) stops at Ctrl-C: exit 130."""
    endless = "while :; do printf ' L 10,4\\n S 7f00,8\\n M 20,1\\n%.0s' $(seq 1000); done"
    cmd = ["bash", "-c", f"exec {' '.join(pagelab_cmd)} sim trace <({endless}) {' '.join(LAB)}"]
    rc, err = _interrupt(cmd)
    assert rc == 130 and err == "pagelab: interrupted\n"


def test_keyboard_interrupt_reaches_an_in_process_replay():
    """In a notebook kernel a long replay raises KeyboardInterrupt at the interrupt (the C parser
    returns to Python between slices), and the kernel goes on."""
    r, w = os.pipe()
    stop = threading.Event()

    def write():
        chunk = b" L 10,4\n S 7f00,8\n" * 4096
        try:
            while not stop.is_set():
                os.write(w, chunk)
        except OSError:
            pass  # the reader closed the pipe
        finally:
            os.close(w)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    s = Simulator(SMALL)
    try:
        with pytest.raises(KeyboardInterrupt):
            s.replay(f"/dev/fd/{r}")
    finally:
        stop.set()
        timer.cancel()
        os.close(r)
        writer.join(timeout=60)
    assert s.stats()["L1D"].accesses > 0  # it was simulating when interrupted


@pytest.mark.parametrize("size", ["4294967295", "513", "99999999999999999999"])
def test_a_size_no_lackey_record_holds_is_one_clear_error(pagelab_cmd, tmp_path, size):
    """' L 0,4294967295' (before: 18.8 s of simulation) is refused at once: exit 2, one line."""
    p = tmp_path / "h.trace"
    p.write_text(f" L 10,4\n L 0,{size}\n")
    r = run([*pagelab_cmd, "sim", "trace", str(p), "-s", "1", "-E", "1", "-b", "2"])
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "line 2" in r.stderr and "1 to 512 bytes" in r.stderr


def test_a_malformed_trace_leaves_an_empty_simulator_empty(tmp_path):
    """Replay reads once; a bad line raises BadInput and an empty simulator stays empty."""
    p = tmp_path / "bad.trace"
    p.write_text(" L 10,4\n S 20,4\n L zz,4\n")
    s = Simulator(SMALL)
    with pytest.raises(BadInput, match="line 3"):
        s.replay(p)
    assert s.stats()["L1D"].accesses == 0 and s.stats().trace is None


def _limit_address_space():
    limit = 120 << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize(
    "args",
    [
        ["doctor"],
        ["doctor", "--json"],
        ["run", "--list"],
        ["stat", "--", "true"],
        ["sim", "trace", "{trace}", *LAB],
        ["sim", "trace", "{trace}", "--l1", "32K:8:64", "--json"],
    ],
)
def test_every_verb_works_under_a_120_mb_address_space(pagelab_cmd, trace, args):
    """Under RLIMIT_AS of 120 MB the verbs run (before, numpy's OpenBLAS died at import)."""
    args = [a.format(trace=trace) for a in args]
    r = run([*pagelab_cmd, *args], preexec_fn=_limit_address_space)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr


def test_sim_trace_imports_neither_numpy_nor_the_experiments(trace):
    """`pagelab sim trace` loads only what it uses: no numpy, plotly or experiments."""
    code = (
        "import sys\n"
        "from pagelab.cli.main import main\n"
        f"main(['sim', 'trace', {str(trace)!r}, *{list(LAB)!r}])\n"
        f"main(['sim', 'trace', {str(trace)!r}, '--l1', '1K:2:64', '--llc', 'none'])\n"
        "heavy = ('numpy', 'plotly', 'pagelab.experiments', 'pagelab.experiments.runner')\n"
        "print(sorted({m.split('.')[0] if not m.startswith('pagelab') else m\n"
        "              for m in sys.modules if m.startswith(heavy)}))\n"
    )
    r = run([sys.executable, "-c", code])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"
