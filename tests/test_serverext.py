"""The server extension behind the kernel panel, against a real `jupyter server` subprocess with
its own token: authentication, real ipykernel counters with sources, only the user's own
kernels, sampling stopped when nobody polls, and no fd leak over 100 kernel starts and stops."""

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from jupyter_client import BlockingKernelClient
from tornado.httpclient import HTTPClientError
from tornado.websocket import websocket_connect

from jupyter_browser import Server
from pagelab._kernelwatch import IDLE_S

SLEEPER = [sys.executable, "-c", "import time; time.sleep(3600)", "{connection_file}"]
# 64 MiB touched page by page with huge pages off: at least 16,384 fresh 4 KiB pages
TOUCH = (
    "import mmap\n"
    "m = mmap.mmap(-1, 64 << 20)\n"
    "m.madvise(mmap.MADV_NOHUGEPAGE)\n"
    "for o in range(0, len(m), 4096): m[o] = 1\n"
)
PAGES = 16384


def _kernelspec(share, name, argv):
    d = share / "kernels" / name
    d.mkdir(parents=True)
    (d / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": name}))


@pytest.fixture(scope="module")
def server():
    root = Path(tempfile.mkdtemp(prefix="pagelab-serverext-"))
    share = root / "share"
    # a kernel that is only a process: enough for the watch, cheap to start 100 times
    _kernelspec(share, "pagelab-sleeper", SLEEPER)
    if os.geteuid() == 0 and shutil.which("setpriv"):
        drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        _kernelspec(share, "pagelab-nobody", drop + SLEEPER)
    s = Server(
        "server",
        root,
        args=["--KernelManager.shutdown_wait_time=0.5"],
        env={"JUPYTER_PATH": str(share)},
    )
    yield s
    s.stop()
    shutil.rmtree(root, ignore_errors=True)


def _start(server, name):
    status, kernel = server.api("/api/kernels", "POST", {"name": name})
    assert status == 201, (status, kernel)
    return kernel["id"]


def _stop(server, kid):
    assert server.api(f"/api/kernels/{kid}", "DELETE")[0] == 204


def _poll_until(server, predicate, timeout=120, query=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, data = server.api(f"/pagelab/kernels?interval_ms=50{query}")
        assert status == 200
        if predicate(data):
            return data
        time.sleep(0.1)
    raise AssertionError(f"no such answer within {timeout} s; last: {data}")


def _kernel(data, kid):
    return next((k for k in data["kernels"] if k["id"] == kid), None)


def _last(kernel, name):
    i = [s["name"] for s in kernel["series"]].index(name)
    return kernel["samples"][-1][1 + i]


def _perf_fds(pid):
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for fd in fds.iterdir() if "perf_event" in os.readlink(fd))


def test_endpoints_need_the_token(server):
    """Without the server's token (or with a wrong one) both endpoints refuse: 401 or 403."""
    for path in ("/pagelab/kernels", "/pagelab/watch"):
        assert server.api(path, token=False)[0] in (401, 403)
        url = f"{path}?token=wrong"
        assert server.api(url, token=False)[0] in (401, 403)
        assert server.api(path)[0] == 200


def test_bad_query_is_one_clear_400(server):
    """An unknown event or a non-numeric interval is a 400, not a server error."""
    assert server.api("/pagelab/kernels?events=no-such-event")[0] == 400
    assert server.api("/pagelab/kernels?interval_ms=fast")[0] == 400


def test_stream_needs_the_token_and_pushes_each_new_sample_once(server):
    """The WebSocket refuses a connection without the token (403) or with an unknown event
    (400); with the token it pushes the user's kernels after each tick, every sample once."""
    kid = _start(server, "pagelab-sleeper")
    url = f"ws://127.0.0.1:{server.port}/pagelab/kernels/stream?interval_ms=50"

    async def refused(address):
        with pytest.raises(HTTPClientError) as e:
            await websocket_connect(address)
        return e.value.code

    async def stream():
        ws = await websocket_connect(f"{url}&token={server.token}")
        times = []
        for _ in range(200):
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
            k = _kernel(msg, kid)
            times += [row[0] for row in (k["samples"] if k else [])]
            if len(times) >= 5:
                break
        ws.close()
        return times

    try:
        assert asyncio.run(refused(url)) == 403
        assert asyncio.run(refused(f"{url}&token=wrong")) == 403
        assert asyncio.run(refused(f"{url}&token={server.token}&events=nope")) == 400
        times = asyncio.run(stream())
    finally:
        _stop(server, kid)
    assert len(times) >= 5 and times == sorted(set(times))


def _touch_in_a_real_kernel(server):
    """(before, after): a real ipykernel's panel entry before and after it touches 64 MiB."""
    kid = _start(server, "python3")
    client = BlockingKernelClient(connection_file=str(server.runtime_dir / f"kernel-{kid}.json"))
    client.load_connection_file()
    # no heartbeat channel: its first ping gives up after 1 s, and a kernel that starts slower
    # than that (a loaded machine) would count as dead; wait_for_ready waits for kernel_info
    client.start_channels(hb=False)
    try:
        client.wait_for_ready(timeout=120)
        has = lambda d: (k := _kernel(d, kid)) is not None and k["samples"]  # noqa: E731
        before = _kernel(_poll_until(server, has), kid)
        reply = client.execute_interactive(TOUCH, timeout=120)
        assert reply["content"]["status"] == "ok"
        t = before["samples"][-1][0]
        after = _kernel(_poll_until(server, has, query=f"&since={t + 0.2}"), kid)
    finally:
        client.stop_channels()
        _stop(server, kid)
    for s in after["series"]:
        assert s["source"] in ("hw", "sw", "rusage")
        assert s["reason"] or _last(after, s["name"]) is not None, s
    for name in ("page-faults", "minflt"):
        assert _last(after, name) - _last(before, name) >= 0.9 * PAGES, name
    assert _last(after, "rss") > 0 and after["pid"] > 0 and after["name"] == "python3"
    faults = next(s for s in after["series"] if s["name"] == "page-faults")
    added = _last(after, "page-faults") - _last(before, "page-faults")
    print(f"page-faults +{added:,.0f} ({faults['source']}; {faults['note'] or faults['reason']})")
    return before, after


@pytest.mark.slow
def test_real_kernel_faults_show_with_their_sources(server):
    """A real ipykernel that touches 64 MiB shows >= 90% of 16,384 more page faults in the
    perf row (or its labelled rusage stand-in) and in /proc's minflt; every series has a source
    and an unavailable one a reason."""
    _touch_in_a_real_kernel(server)


@pytest.fixture(scope="module")
def blocked_server(tools_dir):
    """A server run under the seccomp launcher: neither it nor its kernels may perf_event_open."""
    root = Path(tempfile.mkdtemp(prefix="pagelab-serverext-blocked-"))
    s = Server("server", root, launcher=[str(tools_dir / "pl-noperf")])
    yield s
    s.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_blocked_profile_counts_from_proc_with_the_reason(blocked_server):
    """Where seccomp denies perf_event_open, a real kernel's page faults still rise by >= 90% of
    the 16,384 pages it touches, read from /proc/PID/stat and labelled so (source rusage, the
    seccomp reason in the note); counters /proc cannot stand in for carry the reason and no
    value; the server holds no perf fd."""
    _, after = _touch_in_a_real_kernel(blocked_server)
    series = {s["name"]: s for s in after["series"]}
    faults = series["page-faults"]
    assert faults["source"] == "rusage" and not faults["reason"], faults
    assert "seccomp" in faults["note"] and "/proc/PID/stat" in faults["note"], faults
    for name in ("context-switches", "task-clock"):
        assert "seccomp" in series[name]["reason"], series[name]
        assert _last(after, name) is None
    assert _perf_fds(blocked_server.proc.pid) == 0


def test_another_users_kernel_is_never_shown(server):
    """A kernel process running as another user (nobody) never appears, while one of the
    server's own user started alongside it does."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("starting a kernel as another user needs root and setpriv")
    other, mine = _start(server, "pagelab-nobody"), _start(server, "pagelab-sleeper")
    try:
        data = _poll_until(server, lambda d: _kernel(d, mine) is not None)
        for _ in range(5):
            assert _kernel(data, other) is None
            _, data = server.api("/pagelab/kernels?interval_ms=50")
        _, listed = server.api("/api/kernels")
        assert other in {k["id"] for k in listed}  # the server has it; the panel does not
    finally:
        _stop(server, other)
        _stop(server, mine)


def test_sampling_stops_when_nobody_polls(server):
    """After the last poll the thread stops within IDLE_S (plus slack) and closes its counters."""
    kid = _start(server, "pagelab-sleeper")
    try:
        _poll_until(server, lambda d: _kernel(d, kid) is not None)
        assert server.api("/pagelab/watch")[1]["sampling"]
        deadline = time.monotonic() + IDLE_S + 60
        while server.api("/pagelab/watch")[1]["sampling"]:
            assert time.monotonic() < deadline, "still sampling long after the last poll"
            time.sleep(0.5)
        ticks = server.api("/pagelab/watch")[1]["ticks"]
        time.sleep(1)
        assert server.api("/pagelab/watch")[1]["ticks"] == ticks
        assert _perf_fds(server.proc.pid) == 0
    finally:
        _stop(server, kid)


@pytest.mark.slow
def test_no_fd_leak_over_100_kernel_starts_and_stops(server):
    """100 kernels started, watched and stopped leave no perf fd behind and the server's fd
    count within a small bound of where it was."""
    fds = Path(f"/proc/{server.proc.pid}/fd")

    def cycle():
        kid = _start(server, "pagelab-sleeper")
        _poll_until(server, lambda d: (k := _kernel(d, kid)) is not None and k["samples"])
        _stop(server, kid)

    for _ in range(3):  # warm up: the server's own first-use allocations
        cycle()
    _poll_until(server, lambda d: not d["kernels"])
    before = len(list(fds.iterdir()))
    deadline = time.monotonic() + 900
    for _ in range(100):
        cycle()
        assert time.monotonic() < deadline, "100 kernel cycles took over 15 minutes"
    # a few more polls: the thread drops what the server no longer lists, on its next tick
    for _ in range(50):
        _poll_until(server, lambda d: not d["kernels"])
        if _perf_fds(server.proc.pid) == 0:
            break
        time.sleep(0.1)
    assert _perf_fds(server.proc.pid) == 0
    after = len(list(fds.iterdir()))
    assert after - before <= 10, (before, after)
