"""Record chapters: execute each one top to bottom in a fresh Jupyter kernel, store the facts of
the machine it ran on (kernel release, profile, machine, date) in ``metadata.pagelab.recorded``,
normalize it (.ci/normalize_notebooks.py writes the provenance line from those facts) and write
it back.

Usage:
  python .ci/record_chapters.py [NOTEBOOK ...]            record here (`make record`); without
                                                          notebooks, every chapter no guest records
  python .ci/record_chapters.py --guest a [NOTEBOOK ...]  record in guest a of the kernel matrix
                                                          (tests/kernels.py), then copy them back
                                                          (`make record-guest`); without notebooks,
                                                          the chapters the guest's config records
  python .ci/record_chapters.py --out DIR NOTEBOOK ...    write the recordings into DIR instead
                                                          (what the guest runs: its notebooks/ is
                                                          read-only)
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 900  # s for one cell: a chapter's longest run under TCG takes a few minutes
STARTUP = 300  # s for a kernel to start: about one under TCG, more on a busy host

sys.path.insert(0, str(Path(__file__).parent))
from normalize_notebooks import normalize, text  # noqa: E402


def facts():
    """The provenance of outputs recorded here, read from the machine as every result reads it."""
    from pagelab.counters.doctor import environment

    env = environment()
    if env["core_pmus"]:
        machine = env["cpu"]
    else:
        machine = "VM without a PMU" if env["hypervisor"] else f"{env['cpu']} without a PMU"
    return {
        "kernel": env["kernel"],
        "profile": env["profile"],
        "machine": machine,
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
    }


def record(path, out_dir):
    """Execute the chapter at ``path`` where it lives and write it, recorded, into ``out_dir``."""
    import nbformat
    from nbclient import NotebookClient

    # figures load plotly.js from its CDN, as shipped chapters do, whether or not this machine
    # reaches it (pylib/pagelab/results/plotlyjs.py): embedded, it would add 4.6 MB to a chapter
    os.environ["PAGELAB_PLOTLYJS"] = "cdn"

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=TIMEOUT,
        startup_timeout=STARTUP,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    done = json.loads(nbformat.writes(nb))
    done["metadata"].setdefault("pagelab", {})["recorded"] = facts()
    (out_dir / path.name).write_text(text(normalize(done)), encoding="utf-8")
    print(f"recorded: {path.name}", flush=True)


def _kernels():
    sys.path.insert(0, str(ROOT / "tests"))
    import kernels

    return kernels


def chapters(numbers):
    """The chapters' paths for their numbers ("04")."""
    return [next((ROOT / "notebooks").glob(f"{n}-*.ipynb")) for n in numbers]


def in_guest(name, paths):
    """Record ``paths`` (by default the chapters the guest's config records) in the kernel
    matrix's guest ``name``, then copy them over the originals."""
    kernels = _kernels()
    config = next((c for c in kernels.CONFIGS if c.name == name), None)
    if config is None:
        sys.exit(
            f"no guest {name!r}: tests/kernels.py has {', '.join(c.name for c in kernels.CONFIGS)}"
        )
    paths = paths or chapters(config.records)
    if why := kernels.missing():
        sys.exit(f"cannot boot guest {name}: {why}")
    image = kernels.kernel_image(config)
    if image is None:
        sys.exit(f"no /boot/{config.kernel}: apt-get install the kernel (make setup as root)")
    # one boot a chapter: each gets the guest's whole time limit, and one that fails costs only
    # itself
    for path in paths:
        out = Path(tempfile.mkdtemp(prefix=f"pagelab-record-{name}-"))
        try:
            results = kernels.boot(config, image, sys.executable, out, kernels.kvm_works(), [path])
            recorded = out / path.name
            if "error" in results or not recorded.exists():
                log = out / "record.log"
                said = log.read_text()[-3000:] if log.exists() else results.get("error")
                sys.exit(f"guest {name} did not record {path.name}: {said}")
            shutil.copyfile(recorded, path)
            print(f"recorded in guest {name}: {path.name}", flush=True)
        finally:
            shutil.rmtree(out)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--guest", help="a kernel-matrix guest (tests/kernels.py) to record in")
    parser.add_argument("--out", type=Path, help="where to write the recordings")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks]
    if args.guest:
        in_guest(args.guest, paths)
        return 0
    if not paths:
        guests = {p for c in _kernels().CONFIGS for p in chapters(c.records)}
        paths = sorted(set((ROOT / "notebooks").glob("*.ipynb")) - guests)
    for path in paths:
        record(path, args.out or path.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
