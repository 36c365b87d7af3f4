"""The maintainer's benchmark: every figure of docs/performance.md, measured from a source
checkout with `python -m bench` (see bench/README.md). Not part of the installed package."""
