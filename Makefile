# Every target installs what it needs into .venv first (Python 3.11+ required).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
DEMO_STAMP := $(VENV)/.demo-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# The CDK CLI: the version in package.json (the one place it is written), installed by npm ci.
CDK := node_modules/.bin/cdk
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1

.PHONY: install browser demo test mutants lint format bench soak synth events clean

# The report's browser test needs headless Chromium. Debian's is installed where we may (root, apt-get,
# HOTKEYS_NO_BROWSER unset), beside the Python install; elsewhere that one test is skipped and says why.
BROWSER_INSTALL = if ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	&& [ -z "$$HOTKEYS_NO_BROWSER" ]; then \
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >$(VENV)/browser-install.log 2>&1 \
	|| echo "Chromium could not be installed (see $(VENV)/browser-install.log): the report's browser test is skipped"; fi

# pip's progress in a few lines, neither silence nor hundreds: a start, every 10 packages found, how many it
# downloaded, then the install (every 10 s, the packages whose metadata it has written since), each with
# the seconds since pip started (POSIX sh; awk's srand() returns the time of day it seeded with; the ticker
# stops with its shell). pip's warnings and errors (stderr) pass through as pip writes them, its other
# lines go to $(VENV)/pip-install.log; `$(call PIP_INSTALL,ARGS)` exits with pip's status.
PIP_PROGRESS = now() { awk 'BEGIN { srand(); print srand() }'; }; start=$$(now); found=0; fetched=0; ticker=; \
	say() { echo "  pip: $$1 ($$(($$(now) - start)) s)"; }; say "finding the packages"; \
	while IFS= read -r line; do case $$line in \
	"Collecting "*|"Processing "*|"Obtaining "*|"Requirement already satisfied: "*) found=$$((found + 1)); \
		[ $$((found % 10)) != 0 ] || say "$$found packages found";; \
	*"Downloading "*.metadata" "*) ;; *"Downloading "*) fetched=$$((fetched + 1));; \
	"Installing collected packages: "*) say "$$found packages found, $$fetched downloaded"; \
		n=$$(echo "$$line" | awk -F, '{ print NF }'); say "installing $$n of them"; touch $(VENV)/.pip-mark; \
		(while sleep 10 >/dev/null 2>&1 && kill -0 $$$$ 2>/dev/null; do say "$$(($$(find $(VENV)/lib -name '*.dist-info' \
		-prune -newer $(VENV)/.pip-mark | wc -l))) of $$n installed"; done) & ticker=$$!;; \
	"Successfully installed "*) say "installed $$(echo "$$line" | awk '{ print NF - 2 }') packages";; \
	esac; done; [ -z "$$ticker" ] || kill $$ticker 2>/dev/null; rm -f $(VENV)/.pip-mark
PIP_INSTALL = { PYTHONUNBUFFERED=1 $(BIN)/python -m pip install --progress-bar off $(1); echo $$? >$(VENV)/.pip-status; } \
	| tee $(VENV)/pip-install.log | { $(PIP_PROGRESS); }; pip_status=$$(cat $(VENV)/.pip-status); rm -f $(VENV)/.pip-status; \
	[ "$$pip_status" = 0 ] || echo "make: pip install $(1) failed (exit $$pip_status): its error is above, \
	what it did before in $(VENV)/pip-install.log" >&2; (exit $$pip_status)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (set PYTHON=python3.x)")'
	@echo "make: installing the CLI, the CDK, the linters and the test tools into $(VENV)/ (once; a few minutes)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@($(BROWSER_INSTALL)) & browser=$$!; \
	$(BIN)/python -m pip install --quiet --upgrade pip && { $(call PIP_INSTALL,-e '.[dev]'); }; \
	status=$$?; wait $$browser; exit $$status
	@rm -f $(VENV)/.installed-*
	@touch $@

browser: install
	@$(BROWSER_INSTALL)

# The demo needs the CLI and moto's in-process mocks only: not moto's server (flask, cfn-lint, sympy...),
# plotly (`--report`), the CDK, linters or test tools: a lighter, faster install (with the same current pip
# as `make test`'s, which installs it faster than the one a new venv comes with).
$(DEMO_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (set PYTHON=python3.x)")'
	@echo "make demo: installing the hotkeys CLI and moto into $(VENV)/ (once; under a minute)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --upgrade pip && { $(call PIP_INSTALL,-e '.[local]'); }
	@rm -f $(VENV)/.demo-*
	@touch $@

# Node.js is a prerequisite (the CDK CLI and jsii); the CLI comes from the npm registry once per lock file.
$(CDK): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "Node.js (npm) is required: the CDK CLI and aws-cdk-lib run on it"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(STAMP) $(CDK)

demo: $(DEMO_STAMP)  ## replay the sample events through the real handler on in-process moto
	@echo "make demo: replaying the sample events through the real handler on in-process moto (about a minute)..."
	@$(BIN)/hotkeys replay events/*.json events/*.json.gz

# One pytest-xdist worker per core; a file stays on one worker (the infra file synthesizes the app once).
# pytest-randomly shuffles the files and the tests in each (no test may depend on another's leftovers);
# it prints "Using --randomly-seed=N" first: `make test SEED=N` replays that order.
SEED ?=
test: install browser  ## the whole suite in random order: unit, property, integration (moto), infra (synthesized template)
	$(BIN)/python -m pytest -n auto --dist loadfile -p randomly $(if $(SEED),--randomly-seed=$(SEED))

# Changes each rule of alerts/rules.py, windows.py, sizing.py, indexes.py and summary.py in turn and runs
# the tests that pin it: every surviving mutant is killed by a test or explained (docs/mutants.md).
mutants: install  ## mutation testing of the rules; writes docs/mutants.md
	$(BIN)/python -m tools.mutants

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy functions/hotkeys infra app.py bench tools

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install  ## speed and cost figures for docs/benchmarks.md, then what a Lambda container pays per record
	$(BIN)/python -m bench.detection_latency
	$(BIN)/python -m bench.stats_requests
	$(BIN)/python -m bench.stats_units
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.lambda_process
	$(BIN)/python -m bench.owned_parse
	$(BIN)/python -m bench.kinesis_cpu

soak: install  ## long runs, not in CI: 30 simulated minutes at scale, then thousands of fault schedules
	$(BIN)/python -m bench.soak
	FAULT_SCHEDULES=2000 EXACTLY_ONCE_EXAMPLES=2000 $(BIN)/python -m pytest -q tests/property/test_faults.py tests/property/test_exactly_once.py

# What `npx aws-cdk@<pinned> synth` does: the CLI sets the account and region from your AWS profile
# (without credentials: region only), runs cdk.json's app with its context; cdk-nag checks every synth.
synth: install  ## cdk.out/ with the pinned CDK CLI, as deploy synthesizes it; cdk-nag checked
	$(CDK) synth --quiet

events: install  ## regenerate the generated sample events (deterministic)
	$(BIN)/python -m events.build

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache .hypothesis
