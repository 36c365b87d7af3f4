"""`python -m bench [--json] [--fast] [-o PYPERF.json]`, run from the checkout's root: every
figure of docs/performance.md, each beside its goal (bench/run.py)."""

import argparse
import importlib.util
import json
import sys

from . import run as _run


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="measure the performance figures (docs/performance.md), each side by side",
    )
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument(
        "--fast",
        action="store_true",
        help="fewer repetitions; skip run all, nbval and the browser, server and widget figures",
    )
    p.add_argument("-o", "--output", help="also write the raw timings for pyperf compare_to")
    args = p.parse_args(argv)
    if args.output and importlib.util.find_spec("pyperf") is None:
        p.error("-o needs pyperf: pip install 'pagelab[bench]'")

    def log(msg):
        print(f"bench: {msg}", file=sys.stderr, flush=True)

    doc = _run.run(fast=args.fast, log=log)
    if args.output:
        _run.pyperf_suite(doc).dump(args.output, replace=True)
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for key, f in doc["figures"].items():
        value = "unavailable" if f["value"] is None else f"{f['value']:.4g} {f['unit']}"
        goal = f.get("goal")
        met = "" if goal is None else f"  (goal {goal:g}: {'met' if f['met'] else 'missed'})"
        print(f"{key:<36} {value}{met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
