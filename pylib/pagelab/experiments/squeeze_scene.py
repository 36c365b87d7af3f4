"""What runs inside the squeeze's cgroup: a victim and a competitor (see experiments.squeeze).

Started as a fresh interpreter already inside the cgroup, so it imports the standard library
only: every page it touches is charged to memory.max, and the interpreter's own must stay few.

The victim writes a file, maps it (MADV_RANDOM: no readahead, so one major fault per page read
back) and reads one byte per page: alone, the file fits under memory.max and stays resident.
Then it forks a competitor that fills most of the limit with anonymous memory, which cannot go
to swap (memory.swap.max is 0), so the kernel must reclaim the victim's clean file pages inside
the cgroup. The victim reads its file again and counts its major faults. It prints one JSON
document: its rusage per pass, the cgroup's memory.stat, memory.events and memory.peak, and
how the competitor ended.
"""

import json
import mmap
import os
import resource
import sys
import tempfile

MIB = 1 << 20
RUSAGE = ("minflt", "majflt", "inblock", "oublock", "nvcsw", "nivcsw")
STAT = ("file", "anon", "workingset_refault_file", "workingset_refault")


def own_cgroup():
    """This process's cgroup v2 directory, from /proc/self/mounts and /proc/self/cgroup (None
    outside cgroup v2: then the scene reports no cgroup files, as when run for a test)."""
    with open("/proc/self/mounts") as f:
        mount = next((line.split()[1] for line in f if line.split()[2] == "cgroup2"), None)
    with open("/proc/self/cgroup") as f:
        path = next((line[3:].strip() for line in f if line.startswith("0::")), None)
    return None if mount is None or path is None else os.path.join(mount, path.lstrip("/"))


def read_keyed(path):
    """A flat-keyed cgroup file (memory.stat, memory.events) as {name: int}; {} if missing."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {k: int(v) for k, v in (line.split() for line in f if line.strip())}


def usage():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {f: getattr(ru, "ru_" + f) for f in RUSAGE}


def read_pass(m, size):
    """One byte per page: the counts of one pass over the victim's mapping."""
    before = usage()
    for off in range(0, size, mmap.PAGESIZE):
        m[off]  # a fault wherever the page is not mapped; major where it left memory
    after = usage()
    return {f: after[f] - before[f] for f in RUSAGE}


def nameless_file(directory):
    """A file with no name in ``directory``: it vanishes with this process."""
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError:  # a filesystem without O_TMPFILE
        fd, name = tempfile.mkstemp(prefix=".pagelab-squeeze-", dir=directory)
        os.unlink(name)
        return fd


def compete(size, ready, stop):
    """The competitor: touch ``size`` bytes of anonymous memory, say so, hold it until told."""
    code = 1
    try:
        mem = mmap.mmap(-1, size)
        for off in range(0, size, mmap.PAGESIZE):
            mem[off] = 1  # a store: every page becomes a private anonymous page, charged here
        os.write(ready, b"r")
        os.read(stop, 1)
        code = 0
    finally:
        os._exit(code)


def scene(scratch, file_mb, competitor_mb, join):
    if join:  # a cgroup.procs: move in first, so that everything charged from here on is its
        with open(join, "w") as f:
            f.write("0")
    cgroup = own_cgroup()
    stat = {}

    def file_of(name):
        return os.path.join(cgroup or "/nonexistent", name)

    def snapshot(label):
        s = read_keyed(file_of("memory.stat"))
        stat[label] = {k: s[k] for k in STAT if k in s}

    size = file_mb * MIB
    fd = nameless_file(scratch)
    block = b"\1" * MIB
    for _ in range(file_mb):
        os.write(fd, block)
    os.fdatasync(fd)  # clean pages: reclaim can drop them without writing
    m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    m.madvise(mmap.MADV_RANDOM)  # no readahead: each page read back is a major fault of its own
    passes = {"first read": read_pass(m, size), "alone": read_pass(m, size)}
    snapshot("alone")

    ready_r, ready_w = os.pipe()
    stop_r, stop_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        compete(competitor_mb * MIB, ready_w, stop_r)  # never returns
    os.close(ready_w)
    os.close(stop_r)
    started = os.read(ready_r, 1) == b"r"  # EOF: the competitor died before it was ready
    snapshot("competitor in memory")
    passes["after the competitor"] = read_pass(m, size)
    snapshot("after")
    if started:
        os.write(stop_w, b"s")
    _, status, ru = os.wait4(pid, 0)
    events = read_keyed(file_of("memory.events"))
    peak = limit = None
    if os.path.exists(file_of("memory.peak")):  # Linux 5.19 and later
        with open(file_of("memory.peak")) as f:
            peak = int(f.read())
    if os.path.exists(file_of("memory.max")):
        with open(file_of("memory.max")) as f:
            limit = f.read().strip()
    return {
        "cgroup": cgroup,
        "memory.max": limit,
        "passes": passes,
        "stat": stat,
        "events": events,
        "peak": peak,
        "competitor": {
            "started": started,
            "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "minflt": ru.ru_minflt,
        },
    }


if __name__ == "__main__":  # run as a script, with -I: nothing but the standard library
    print(json.dumps(scene(**json.loads(sys.argv[1]))))
