# pagelab: `make lab` opens the lab, `make test` runs every test. Both set up what they need.
#
# Variables: PYTHON (interpreter for the venv, default python3), LAB_ARGS (extra arguments for
# jupyter lab, e.g. LAB_ARGS="--no-browser --port 8899"), PYTEST_ARGS (e.g. "-k doctor -x").

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.pagelab-installed
# Everything that changes the compiled extension or the installed metadata.
INSTALL_INPUTS := pyproject.toml setup.py pylib/pagelab/_ffi_build.py \
	$(shell find csrc -name '*.[ch]' -not -path 'csrc/tools/*')
# command:debian-package pairs the tests and chapters use (valgrind for cachegrind agreement and
# lackey traces, perf for `perf stat` agreement, strace for chapter 10's startup trace).
# Installed only when missing and only when running as root.
SYSTEM_DEPS := valgrind:valgrind perf:linux-perf strace:strace

.PHONY: setup lab test system-deps clean

setup: system-deps $(STAMP)

$(STAMP): $(INSTALL_INPUTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[lab,bench,test]'
	@touch $@

system-deps:
	@missing=""; \
	for pair in $(SYSTEM_DEPS); do \
		command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair##*:}"; \
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

clean:
	rm -rf $(VENV) build pylib/*.egg-info pylib/pagelab/_native*.so
