# Set-up is two commands: `make bench` and `make test`; both install into .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# The main job: the seed's experiment on the ten seed models.
BENCH_ARGS ?= --suite seed --performance --use-xla-baseline --randomize-input \
	--backend=torchxla_trivial,torchxla_trace_once --overwrite
# The same experiment on every built-in model (46; about an hour on 2 cores).
BENCH_ALL_ARGS ?= --suite builtin --performance --use-xla-baseline --randomize-input \
	--backend=torchxla_trivial,torchxla_trace_once --overwrite \
	--output results/performance_inference_cpu_builtin.csv

.PHONY: install bench bench-all test test-all bench-overhead nightly clean

install: $(STAMP)

# Re-runs only when the package metadata changed; otherwise returns at once.
$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

bench: install
	$(PY) runner.py $(BENCH_ARGS)

bench-all: install
	$(PY) runner.py $(BENCH_ALL_ARGS)

bench-overhead: install
	$(PY) -m benchmarks.overhead

test: install
	$(PY) -m pytest -m "not slow"

test-all: install
	$(PY) -m pytest

clean:
	rm -rf results/*.csv results/*.md results/*.jsonl results/*.png .pytest_cache

# Every backend on the full suite into results/nightly/<date>/, compared with
# the previous night; exits 1 on a significant regression or a new failure.
nightly: install
	$(PY) -m benchmarks.nightly $(if $(NIGHTLY_ARGS),-- $(NIGHTLY_ARGS))
