# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
ENV ?= dev

# Nothing here may reach the network at synth time: no CDK notices, no telemetry, and no
# warning banner from jsii about the machine's Node version.
export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_DISABLE_NOTICES := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 20
export PYTHONDONTWRITEBYTECODE := 1

CDK := npx --no-install cdk --no-notices

.PHONY: help setup demo test lint synth diff deploy scenarios bench soak mutation clean

help:
	@echo "make demo          run the whole pipeline locally (offline) through a narrated scenario"
	@echo "make test          lint and run the test suite"
	@echo "make synth ENV=dev synthesize one environment (dev, staging, prod, local)"
	@echo "make deploy ENV=…  deploy one environment with the project's CDK CLI"
	@echo "make scenarios     run the queueing scenarios and write bench/REPORT.md"
	@echo "make bench         run the micro-benchmarks"
	@echo "make soak          the local runtime under load, 10 minutes per traffic shape; writes its section of bench/REPORT.md"
	@echo "make mutation      mutation score of the domain rules (FILES='consumer.retry consumer.batch' picks modules)"

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=25.1"
	$(PY) -m pip install --quiet --group dev
	$(PY) -m pip install --quiet -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --ignore-scripts
	touch $@

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.mutation-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet --group mutation
	touch $@

# Every process of the run writes which grant each function used under $(LEDGER); the last step
# fails on a grant no call used (tests/grants/).
LEDGER := $(CURDIR)/.grant-ledger

test: setup
	$(VENV)/bin/ruff check .
	rm -rf $(LEDGER)
	LANES_GRANT_LEDGER=$(LEDGER) $(PY) -m pytest -n 2 --dist loadgroup --ignore=tests/scenarios --ignore=tests/grants
	# The small scenarios host every function in the test process; a process of their own keeps
	# them and the unit tests from sharing loggers and stdout captures.
	LANES_GRANT_LEDGER=$(LEDGER) $(PY) -m pytest -n 2 --dist loadgroup tests/scenarios
	LANES_GRANT_LEDGER=$(LEDGER) $(PY) -m pytest tests/grants

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy lambdas/pipeline stacks ops

synth: setup
	$(CDK) synth -c env=$(ENV) --quiet

diff: setup
	$(CDK) diff -c env=$(ENV)

deploy: setup
	$(VENV)/bin/lanectl preflight --env $(ENV)
	$(CDK) deploy -c env=$(ENV)

demo: setup
	$(VENV)/bin/lanectl demo

scenarios: setup
	$(PY) -m bench.scenarios

bench: setup
	$(PY) -m bench.run_all

soak: setup
	$(PY) -m bench.soak

# Not part of `make test`. Every run starts from a clean mutants/ (mutmut's copy of the project),
# so each mutant is judged by the tests as they are now; one worker leaves a core for the rest.
# FILES names the modules of lambdas/pipeline/domain to run and report, dotted from there. The
# consumer's rules are mutated too but not run by default: consumer/batch.py, task_step.py, settling.py and batch_time.py
# have about 1022 mutants, some 45 minutes with one worker (most die in the in-memory pipeline
# tests within a second; each survivor runs a minute of moto tests): name them in FILES on the
# command line to run them, `make mutation FILES="consumer.batch consumer.task_step consumer.settling consumer.batch_time"`.
FILES ?= webhook.delivery webhook.routing jobs.admission consumer.retry dependencies.budgets consumer.marks \
	stored_text erasure.requests jobs.requests
mutation: setup $(VENV)/.mutation-installed
	rm -rf mutants
	$(PY) tests/mutation/mutate.py run --max-children 1 $(foreach f,$(FILES),"pipeline.domain.$(f).*")
	$(PY) tests/mutation/report.py $(FILES)

clean:
	rm -rf cdk.out .pytest_cache mutants
