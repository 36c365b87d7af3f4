# pagelab: `make lab` opens the lab, `make test` runs every test (what .ci/run calls), `make check`
# the fast tier (under 3 minutes). All set up what they need.
#
# Variables: PYTHON (interpreter for the venv, default python3), LAB_ARGS (extra arguments for
# jupyter lab, e.g. LAB_ARGS="--no-browser --port 8899"), PYTEST_ARGS (e.g. "-k doctor -x"),
# HW_REPORT (where `make hw-check` writes its report, default hw-report.md).
# Release and upkeep (RELEASE.md): `make wheel` and `make sdist` build into dist/, `make docs`
# builds the docs site into build/docs, `make notebooks` strips execution leftovers from the
# chapters and writes their provenance lines (tests/chapters/test_normalized.py checks that it
# has run), `make record` and `make record-guest` record the chapters' outputs.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.pagelab-installed
# Everything that changes the compiled extension or the installed metadata.
INSTALL_INPUTS := pyproject.toml setup.py labext/package.json pylib/pagelab/_ffi_build.py \
	$(shell find csrc -name '*.[ch]' -not -path 'csrc/tools/*')
# command:debian-package pairs the tests and chapters use (valgrind for cachegrind agreement and
# lackey traces, perf for `perf stat` agreement, strace for chapter 10's startup trace, chromium
# for the browser tests, node and npm to build the widget's front end from labext/, clang for
# %%c, whose simulated build then makes the measured build's vector accesses, gdb for chapter
# 09's attach to a thread waiting on a lock). Installed only when missing and only when running
# as root.
SYSTEM_DEPS := valgrind:valgrind perf:linux-perf strace:strace chromium:chromium node:nodejs \
	npm:npm clang:clang gdb:gdb
# The real-kernel matrix (tests/system/test_kernels.py): QEMU, the static busybox virtme-ng
# builds its initramfs from, and Debian's packaged kernels, 6.1 (linux-image-amd64) and 6.12.
# Installed the same way, checked by package because a kernel brings no command.
KERNEL_DEPS := qemu-system-x86 busybox-static linux-image-amd64 linux-image-6.12-amd64
# glibc's debugging symbols, for gdb to name malloc_check and the lock it waits on (chapter 09).
SYMBOL_DEPS := libc6-dbg
# The LiveCounters front end: TypeScript in labext/src bundled into one ESM file that the Python
# widget loads, beside its style sheet (package data; users of the wheel need no Node).
FRONT_END := pylib/pagelab/jupyter/static/livecounters.js
NODE_MODULES := labext/node_modules/.package-lock.json
# The JupyterLab extension (kernel panel, status-bar item), prebuilt by @jupyterlab/builder into
# the package (Node only: JupyterLab's core versions come from @jupyterlab/core-meta); the wheel
# installs it and the server extension's config where Jupyter looks.
LABEXTENSION := pylib/pagelab/jupyter/labextension/package.json
# The same two for this checkout's editable install, the way docs/deploy.md tells a conda user:
# the lab extension linked into the venv (so a rebuild shows at once), the server extension's
# config copied where the wheel would install it.
DEV_LABEXT := $(VENV)/share/jupyter/labextensions/pagelab
DEV_SERVER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.d/pagelab.json

.PHONY: setup lab test test-kernels system-deps clean

# The fast tier: each sub-package's unit tests (tests/<sub-package>/) and the project's own
# checks (tests/project/: the layout, the docs' claims, lint), without the slow marker: no
# browser, chapters, wheel or kernels; 860 tests in about 2 minutes here.
CHECK_TESTS := $(addprefix tests/,cell cli counters experiments jupyter machine native results \
	sim project)

# `make hw-check` (bench/hw_check.py, docs/hardware.md): a venv of its own with only what the
# CLI's counters need to build and run (cffi, setuptools: no Jupyter, no Node), made once, and
# the extension built in place; it installs nothing when the venv exists, so a copy of both
# carried to a machine without a network runs there.
HWVENV := .hwvenv
HW_REPORT ?= hw-report.md
NATIVE := pylib/pagelab/_native.abi3.so

.PHONY: setup lab test check system-deps clean hw-check wheel sdist docs notebooks record \
	record-guest

setup: system-deps $(STAMP) $(FRONT_END) $(LABEXTENSION) $(DEV_LABEXT) $(DEV_SERVER_CONFIG)

$(STAMP): $(INSTALL_INPUTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'  # --group (PEP 735)
	$(BIN)/python -m pip install --quiet -e '.[lab,bench]' --group test --group docs
	@touch $@

$(NODE_MODULES): labext/package.json labext/package-lock.json
	cd labext && npm ci --no-audit --no-fund --loglevel=error

$(FRONT_END): $(NODE_MODULES) $(wildcard labext/src/*.ts) labext/style/index.css
	cd labext && npm run --silent build

$(LABEXTENSION): $(NODE_MODULES) $(wildcard labext/src/*.ts) labext/style/index.css \
		labext/schema/plugin.json labext/install.json
	cd labext && npm run --silent build:lab

$(DEV_LABEXT): | $(STAMP)
	$(BIN)/jupyter-builder develop --overwrite .

# (`jupyter server extension enable` refuses an extension that no config file names yet)
$(DEV_SERVER_CONFIG): jupyter-config/jupyter_server_config.d/pagelab.json | $(STAMP)
	install -D -m 644 $< $@

system-deps:
	@missing=""; \
	for pair in $(SYSTEM_DEPS); do \
		command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair##*:}"; \
	done; \
	for pkg in $(KERNEL_DEPS) $(SYMBOL_DEPS); do \
		dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q '^install ok installed' || \
			missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing system packages:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
		else \
			echo "note: missing system packages:$$missing (tests that need them will skip and say so)"; \
		fi; \
	fi

lab: setup
	$(BIN)/pagelab lab $(LAB_ARGS)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The real-kernel matrix alone (also part of `make test`): one guest per configuration, one table.
test-kernels: setup
	$(BIN)/python -m pytest tests/system/test_kernels.py $(PYTEST_ARGS)

check: setup
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS) $(CHECK_TESTS)

hw-check: $(HWVENV)/bin/python $(NATIVE)
	$(HWVENV)/bin/python bench/hw_check.py --report $(HW_REPORT)

$(HWVENV)/bin/python:
	$(PYTHON) -m venv $(HWVENV)
	$@ -m pip install --quiet cffi 'setuptools>=77'

# (the editable install of `make setup` builds the same file)
$(NATIVE): $(INSTALL_INPUTS) | $(HWVENV)/bin/python
	$(HWVENV)/bin/python setup.py --quiet build_ext --inplace

# the manylinux wheel for this machine (.ci/wheel says which glibc it allows)
wheel: setup
	PYTHON=$(BIN)/python .ci/wheel dist

# the sdist, with the built front ends in it (installs without Node)
sdist: setup
	$(BIN)/python -m build --sdist --outdir dist .

# the docs site: docs/ and the chapters with their stored outputs (never executed)
docs: setup
	$(BIN)/sphinx-build -W --keep-going -q -b html -c docs . build/docs

notebooks: setup
	$(BIN)/python .ci/normalize_notebooks.py notebooks/*.ipynb

# Record the chapters' outputs (.ci/record_chapters.py; docs/instructors.md, "Recording the
# chapters"): `make record` on this machine, every chapter a kernel-matrix guest does not record
# (or CHAPTERS="notebooks/02-*.ipynb ..."); `make record-guest` those whose outputs need guest
# (a)'s kernel: swap, a memory cgroup of the lab's, vsyscall=emulate (tests/kernels.py).
record: setup
	$(BIN)/python .ci/record_chapters.py $(CHAPTERS)

record-guest: setup
	$(BIN)/python .ci/record_chapters.py --guest a

clean:
	rm -rf $(VENV) $(HWVENV) $(HW_REPORT) build dist pylib/*.egg-info pylib/pagelab/_native*.so \
		pylib/pagelab/_version.py \
		pylib/pagelab/jupyter/static \
		pylib/pagelab/jupyter/labextension labext/lib labext/node_modules
