# Set-up is two commands: `make bench` and `make test`; both install into .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# The main job: the seed's experiment on the ten seed models.
BENCH_ARGS ?= --suite seed --performance --use-xla-baseline --randomize-input \
	--backend=torchxla_trivial,torchxla_trace_once --overwrite
# The same experiment on every built-in model (46; about an hour on 2 cores).
BENCH_ALL_ARGS ?= --suite builtin --performance --use-xla-baseline --randomize-input \
	--backend=torchxla_trivial,torchxla_trace_once --overwrite \
	--output results/performance_inference_cpu_builtin.csv

.PHONY: install bench bench-all test test-all test-torch-xla bench-overhead bench-first-calls nightly clean browser dashboard \
	nightly-plan nightly-shard nightly-merge nightly-gate nightly-history nightly-publish

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

# First calls of ours and openxla_eval on the ten seed models, each in fresh
# interpreters (median of 3 per backend and model).
bench-first-calls: install
	$(PY) -m benchmarks.overhead --first-calls-only --graphs seed

# torch_xla's own dynamo tests (../shared/peer), pointed at our backends.
test-torch-xla: install
	$(PY) -m pytest tests/test_torch_xla_suite.py

# A worker per CPU (pytest-xdist), each test file in one worker: the suite
# spends much of its time waiting on subprocesses, which the other worker fills.
PYTEST_PARALLEL ?= -n auto --dist loadfile

test: install browser
	$(PY) -m pytest -m "not slow" $(PYTEST_PARALLEL)

test-all: install browser
	$(PY) -m pytest $(PYTEST_PARALLEL)

# Debian's chromium, for the dashboard's browser tests (Playwright drives it;
# its own browser download is not reachable). Needs root or sudo.
browser:
	test -x /usr/bin/chromium || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }

clean:
	rm -rf results/*.csv results/*.md results/*.jsonl results/*.png .pytest_cache

# Every backend on the full suite into results/nightly/<date>/, compared with
# the previous night; exits 1 on a significant regression or a new failure.
nightly: install
	$(PY) -m benchmarks.nightly $(if $(NIGHTLY_ARGS),-- $(NIGHTLY_ARGS))

# The nightly in CI, step by step: the jobs of .github/workflows/nightly.yml
# call these (plan -> shard x N -> merge -> gate -> dashboard -> publish).
# Parameters come from the environment and are read by the shell ("$$VAR"),
# never expanded by make, so a workflow input cannot inject commands:
# NIGHTLY_DATE (YYYY-MM-DD, default today UTC), NIGHTLY_SHARDS (default 4),
# NIGHTLY_SHARD, NIGHTLY_FILTER (model regex), NIGHTLY_BACKENDS (comma-separated).
NIGHTLY_ROOT ?= results/nightly
SITE_DIR ?= results/site

nightly-plan:
	@$(PYTHON) -m benchmarks.nightly plan --shards "$${NIGHTLY_SHARDS:-4}" --date "$${NIGHTLY_DATE:-}"

nightly-shard: install
	$(PY) -m benchmarks.nightly shard --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}" \
		--shards "$${NIGHTLY_SHARDS:-4}" --shard "$${NIGHTLY_SHARD:-0}" \
		$${NIGHTLY_BACKENDS:+--backends "$$NIGHTLY_BACKENDS"} $${NIGHTLY_FILTER:+--filter "$$NIGHTLY_FILTER"} \
		$(if $(NIGHTLY_ARGS),-- $(NIGHTLY_ARGS))

nightly-merge: install
	$(PY) -m benchmarks.nightly merge --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}"

# Exit status 1 (make: 2) on a regression, a new failure or a removed row.
nightly-gate: install
	$(PY) -m benchmarks.nightly gate --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}" $(GATE_ARGS)

# The earlier nights: the results branch, checked out as $(NIGHTLY_ROOT).
nightly-history:
	$(PYTHON) -m benchmarks.nightly fetch-history --root $(NIGHTLY_ROOT)

nightly-publish:
	$(PYTHON) -m benchmarks.nightly publish --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}"

# The history as a static site: $(SITE_DIR)/index.html.
dashboard: install
	$(PY) runner.py dashboard $(NIGHTLY_ROOT) -o $(SITE_DIR)
