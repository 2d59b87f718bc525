# zero: the two commands of the README are `make run` and `make test`.
#
#   make run                       one generation of params.yaml through `prefect deployment run zero-generation/local`
#   make run PARAMS=params-smoke.yaml   the same with the smoke params (one whole generation: 187 s on a shared core)
#   make test                      install everything into .venv and run the tests
#
#   make campaign LINE=go-9        train a line (campaigns/go-9.yaml) generation after generation from its state in
#                                  campaigns/state/, shipping each champion to models/go-9.pt + .json + .window/
#   make campaign-save WS=DIR      that workspace's newest champion, lineage, window and recipe into campaigns/state/
#   make reproduce LINE=go-9       re-create the shipped champion's last generation from this clone; compare hashes
#   make ladder PARAMS=...         the champion against GNU Go and fixed opponents; Elo of the line
#   make compare SPEC=...          recipes at equal compute: their lines' networks in one Elo pool
#   make test-fast                 the tests not marked slow (a few minutes)
#   make test-long                 the checks too long for every CI run (seeded kills, the paper recipe's learning)
#
# Other targets: install, lock, up, down, serve, repro, loop, record, ship, results, mlflow-ui, where, check, clean-runs.
# Nothing listens beyond 127.0.0.1; PREFECT_HOME, the MLflow database and the DVC remote live in this directory.
# By hand: `. .venv/bin/activate` sets this workspace's settings and ports, then prefect, dvc, mlflow and
# `python -m flows.serve` work as `make where` prints them (make install PREFECT_PORT=4300 MLFLOW_PORT=5300: other ports).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PARAMS ?= params.yaml
PYTHON ?= python3
VENV ?= .venv
# the workspace's ports, as `make install PREFECT_PORT=... MLFLOW_PORT=...` last chose them (written with the venv)
-include $(VENV)/zero-ports.mk
PREFECT_PORT ?= 4200
MLFLOW_PORT ?= 5000
PYTEST_ARGS ?= -rs

BIN := $(CURDIR)/$(VENV)/bin
# pip's complaints about this machine's absent file:// package indexes, one per package: not worth reading
PIP_NOISE := { grep -v "^WARNING: Location 'file://" || true; }
STAMP := $(VENV)/.zero-installed
TORCH ?= torch==2.13.0+cpu
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

export PREFECT_HOME := $(CURDIR)/.prefect
export PREFECT_API_URL := http://127.0.0.1:$(PREFECT_PORT)/api
export ZERO_PREFECT_PORT := $(PREFECT_PORT)
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_API_HOST := 127.0.0.1
export MLFLOW_TRACKING_URI := sqlite:///$(CURDIR)/mlflow.db
export MLFLOW_DISABLE_TELEMETRY := true
export MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR := false
export DVC_NO_ANALYTICS := 1
export DO_NOT_TRACK := 1
export PATH := $(BIN):$(PATH)

.PHONY: help install gnugo openssh run up down serve check where repro loop campaign campaign-save record ship results reproduce ladder compare mlflow-ui test test-fast test-long lock clean-runs

help:
	@sed -n '3,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

# The venv and the project with its pipeline, ray and test extras (ray: the tests start a real Ray cluster). torch is installed first,
# pinned to its CPU build (2.13.0+cpu: from a local wheel where pip finds one, otherwise from PyTorch's CPU index; PyPI's Linux
# wheel brings gigabytes of CUDA libraries). A GPU box names its
# CUDA build instead: make install TORCH=torch==2.13.0 TORCH_INDEX=https://download.pytorch.org/whl/cu128
# Every other package at the exact version of requirements.lock (`make lock` remakes it from pyproject.toml's ranges).
# Then `zero warmup` compiles the engine's kernels once (into zero/__pycache__), so the first `zero gtp` does not.
LOCK := requirements.lock
$(STAMP): pyproject.toml $(LOCK)
	@echo "installing zero with its pipeline, ray and test extras into $(VENV) (about 3 minutes the first time)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet "$(TORCH)" 2>/dev/null || { set -o pipefail; \
		$(BIN)/python -m pip install --quiet "$(TORCH)" --extra-index-url "$(TORCH_INDEX)" 2>&1 | $(PIP_NOISE); }
	@set -o pipefail; $(BIN)/python -m pip install --quiet -c $(LOCK) -e ".[pipeline,ray,test]" 2>&1 | $(PIP_NOISE)
	@$(MAKE) --no-print-directory gnugo
	@$(MAKE) --no-print-directory openssh
	@echo "compiling the search kernels of zero gtp, zero play and self-play into numba's cache (zero warmup, about 20 s of a core)"
	@$(BIN)/zero warmup
	@touch $@

# requirements.lock anew: pyproject.toml's ranges resolved in a throwaway venv, frozen (torch left to TORCH).
lock:
	@rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	@.lock-venv/bin/python -m pip install --quiet "$(TORCH)" 2>/dev/null || .lock-venv/bin/python -m pip install \
		--quiet "$(TORCH)" --extra-index-url "$(TORCH_INDEX)"
	@set -o pipefail; .lock-venv/bin/python -m pip install --quiet -e ".[pipeline,ray,test]" 2>&1 | $(PIP_NOISE)
	@{ sed -n '1,2p' $(LOCK); .lock-venv/bin/python -m pip freeze --exclude-editable | grep -v '^torch=='; } > $(LOCK).new
	@mv $(LOCK).new $(LOCK) && rm -rf .lock-venv && echo "$(LOCK): $$(grep -vc '^#' $(LOCK)) packages"

# GNU Go 3.8, the ladder's outside engine: installed with apt-get where this runs as root on Debian or Ubuntu,
# otherwise say how (the ladder and its tests need it; everything else runs without it).
gnugo:
	@if command -v gnugo >/dev/null || [ -x /usr/games/gnugo ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing GNU Go (apt-get install gnugo) for the ladder"; \
		(apt-get update -qq && apt-get install -y -qq gnugo) >/dev/null 2>&1 || echo "GNU Go could not be installed: the ladder against it is unavailable"; \
	else echo "GNU Go is not installed: the ladder needs it (apt-get install gnugo, or brew install gnu-go)"; fi

# OpenSSH's sshd and ssh-keygen, for the test of a DVC remote over SSH (tests/test_dvc_remote_ssh.py starts its own sshd
# on 127.0.0.1): installed with apt-get where this runs as root on Debian or Ubuntu, the package's own ssh service
# disabled again; otherwise say how (only that test needs them).
openssh:
	@if command -v sshd >/dev/null || [ -x /usr/sbin/sshd ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing OpenSSH (apt-get install openssh-server openssh-client) for the SSH remote's test"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client) >/dev/null 2>&1 \
			|| echo "OpenSSH could not be installed: the SSH remote's test is skipped"; \
		systemctl disable --now ssh >/dev/null 2>&1 || true; \
	else echo "OpenSSH's sshd is not installed: the SSH remote's test is skipped (apt-get install openssh-server)"; fi

# Pachi 12.90, the ladder's outside anchor above GNU Go (`pachi:N` opponents), built into .pachi/ from its source in
# PACHI_SRC (about 35 s); not part of install: only a ladder against Pachi needs it.
PACHI_SRC ?= ../shared/pachi
.PHONY: pachi
pachi:
	@if .pachi/pachi --version 2>/dev/null | grep -q '^Pachi 12.90'; then echo "Pachi 12.90: $(CURDIR)/.pachi/pachi"; \
	elif [ -f "$(PACHI_SRC)/build.sh" ]; then echo "building Pachi 12.90 into .pachi/ from $(PACHI_SRC) (about 35 s)"; \
		bash "$(PACHI_SRC)/build.sh" .pachi; \
	else echo "no Pachi source in $(PACHI_SRC): get Pachi 12.90 and build it without its network, e.g." >&2; \
		echo "  git clone -b pachi-12.90 https://github.com/pasky/pachi .pachi && make -C .pachi DCNN=0 JOSEKIFIX=0 GENERIC=1" >&2; \
		echo "or: make pachi PACHI_SRC=DIR (DIR holding pachi-12.90.tar.xz and build.sh); ZERO_PACHI=PATH names a built one" >&2; \
		exit 1; fi

# The venv's activate script carries this workspace's settings and ports (infra/env.sh): `. .venv/bin/activate`.
install: $(STAMP)
	@$(BIN)/python -m flows.serve --port $(PREFECT_PORT) activate --venv $(VENV) --mlflow-port $(MLFLOW_PORT)

# Validate the params file before anything starts (a bad key or value is named here).
check: install
	@$(BIN)/python -m flows.serve check $(PARAMS)

up: install
	@$(BIN)/python -m flows.serve up

down:
	@test -x $(BIN)/python && $(BIN)/python -m flows.serve down || true

serve: install
	$(BIN)/python -m flows.serve serve

where: install
	@$(BIN)/python -m flows.serve where --params $(PARAMS) --mlflow-port $(MLFLOW_PORT)

# One generation through the served deployment; waits for it and prints where to look. The wait ends, with
# the retry command, when the run fails or crashes, or when its process is gone (killed with the serve process).
# A line another run holds is refused at once (no run is started); Ctrl-C cancels the run.
run: install
	@$(BIN)/python -m flows.serve check --line-free $(PARAMS)
	@$(BIN)/python -m flows.serve up
	@echo "python -m flows.serve run $(PARAMS)   (prefect deployment run zero-generation/local, then waits)"
	@$(BIN)/python -m flows.serve run $(PARAMS); status=$$?; \
	$(BIN)/python -m flows.serve where --params $(PARAMS) --mlflow-port $(MLFLOW_PORT); \
	if [ $$status -eq 130 ]; then exit $$status; fi; \
	if [ $$status -ne 0 ]; then echo "the flow run did not complete: its log is in the Prefect UI and .prefect/serve.log"; fi; \
	exit $$status

# Generations back to back until the run is cancelled (in the UI, or `prefect flow-run cancel ID`).
loop: check up
	$(BIN)/prefect deployment run zero-loop/local --param params_file=$(PARAMS)

# A training campaign: zero-loop over campaigns/$(LINE).yaml, shipping each champion that passes.
# OVERRIDES: section.key=value settings on top of the line's file, space-separated (e.g. the float32 switches
# that `flows.serve check` names on a CPU without bfloat16 instructions).
LINE ?= go-9
# A line whose ladder plays Pachi (`pachi:N` among campaigns/$(LINE).yaml's opponents) builds it first.
campaign: install up $(if $(shell grep -s '^ *opponents:.*pachi:' campaigns/$(LINE).yaml),pachi)
	@$(BIN)/python -m flows.lineage committed
	@$(BIN)/python -m flows.serve check campaigns/$(LINE).yaml $(foreach o,$(OVERRIDES),--set $(o))
	$(BIN)/prefect deployment run zero-loop/local --param params_file=campaigns/$(LINE).yaml --param ship=true \
		$(if $(OVERRIDES),--param overrides="$$($(BIN)/python -c 'import json,sys; print(json.dumps(sys.argv[1:]))' $(OVERRIDES))")

# A campaign's newest state (champion, lineage, training window, recipe) from workspace $(WS) into
# campaigns/state/, where campaigns/$(LINE).yaml resumes from, and the line's in-flow ladders by span
# (flows.trend) into docs/strength/$(LINE)-line/trend/ where that folder is; commit both after it. With its recipe,
# the saved champion ships later without the workspace (make ship SAVED=campaigns/state).
WS ?= .
campaign-save: install
	$(BIN)/python -m flows.ship --root $(WS) --params campaigns/$(LINE).yaml --models campaigns/state
	@if [ -d docs/strength/$(LINE)-line ]; then $(BIN)/python -m flows.trend campaigns/state/$(LINE).json \
		--out docs/strength/$(LINE)-line/trend >/dev/null && echo "docs/strength/$(LINE)-line/trend: the line's in-flow ladders by span"; fi

# Generations made elsewhere by flows.standalone (a GPU machine without the servers), copied into gens/:
# zero-loop over the same params file records each in DVC, MLflow and the registry, playing nothing again.
# OVERRIDES: the section.key=value settings they were made with, if any, space-separated.
OVERRIDES ?=
record: check up
	@n=$$($(BIN)/python -m flows.standalone pending $(PARAMS)); echo "$$n generation(s) of $(PARAMS) to record"; \
	if [ "$$n" -gt 0 ]; then $(BIN)/prefect deployment run zero-loop/local --param params_file=$(PARAMS) \
		--param generations=$$n --param overrides="$$($(BIN)/python -c 'import json,sys; print(json.dumps(sys.argv[1:]))' $(OVERRIDES))" \
		--watch --watch-interval 10; fi

# The workspace's champion of campaigns/$(LINE).yaml to models/$(LINE).pt with its lineage models/$(LINE).json
# and its recipe models/$(LINE).reproduce/ (GEN: the workspace's generation to ship; default the last).
# SAVED=campaigns/state: the champion `make campaign-save` saved there, with its recipe, once its workspace is gone.
GEN ?=
SAVED ?=
ship: install
	$(BIN)/python -m flows.ship --params campaigns/$(LINE).yaml \
		$(if $(SAVED),--saved $(SAVED),--root $(WS) $(if $(GEN),--generation $(GEN)))
	$(BIN)/python -m flows.results

# The README's strength table and docs/strength.md's table of every result, written from the committed
# records (models/, campaigns/state/, docs/strength/); `make ship` runs it.
results: install
	$(BIN)/python -m flows.results

# The shipped champion of $(LINE) re-created from this clone: its last generation by dvc repro in a checkout of
# the commit that made it (reproduce/$(LINE)/), every hash compared with the lineage. CHAIN=1: its whole run.
reproduce: install
	$(BIN)/python -m flows.reproduce --line $(LINE) $(if $(CHAIN),--chain)

# The champion of $(PARAMS)'s line against GNU Go and fixed opponents; ratings and plot in gens/<line>/ladder/.
ladder: check up
	$(BIN)/prefect deployment run zero-ladder/local --param params_file=$(PARAMS) --watch --watch-interval 10

# Recipes compared at equal compute (docs/recipes/go-9/compare.yaml): the missing matches, ratings, compare.png, table.md.
SPEC ?= docs/recipes/go-9/compare.yaml
compare: install
	$(BIN)/python -m flows.compare $(SPEC) --mlflow $(MLFLOW_TRACKING_URI)

# Re-create every generation's outputs that are missing or changed, with the flow's code.
repro: install
	$(BIN)/dvc repro

# MLflow's UI (docs/mlflow.md) from one uvicorn worker (MLflow's four, each importing MLflow on a busy core,
# were killed and restarted by uvicorn's 5 s start check for minutes) and no job runner (its seven huey
# consumers run GenAI jobs the pipeline never starts). --app-name zero: MLflow's app, its page opening in the
# model-training view (flows/mlflow_ui.py). infra/mlflow_ui_check.py times it and checks it in a browser.
mlflow-ui: install
	MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false $(BIN)/mlflow ui --app-name zero --workers 1 \
		--backend-store-uri $(MLFLOW_TRACKING_URI) --host 127.0.0.1 --port $(MLFLOW_PORT)

# The tests run in two pytest-xdist workers, each module on one worker (a module's servers and workspaces are
# set up once); --durations=25 prints where the time went. pytest's exit 5 (no tests collected) is a failure here.
# The tests start their own servers in temporary directories: none of this workspace's settings leak in.
TEST_WORKERS ?= 2
PYTEST := env -u PREFECT_HOME -u PREFECT_API_URL -u ZERO_PREFECT_PORT -u MLFLOW_TRACKING_URI $(BIN)/python -m pytest
XDIST = $(if $(filter-out 0 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope)
test: install
	@$(PYTEST) $(XDIST) -m "not long" --durations=25 $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$status

# The tests not marked slow: the library, the rules, the CLI, the GTP engine (a few minutes).
test-fast: install
	@$(PYTEST) $(XDIST) -m "not slow and not integration and not long" $(PYTEST_ARGS)

# The checks too long for every CI run (docs/testing.md says when to run them): the 20 seeded kill points
# (ZERO_FAULTS=full; ZERO_FAULTS=N runs the first N) and the learning test's paper recipe.
ZERO_FAULTS ?= full
test-long: install
	@ZERO_FAULTS=$(ZERO_FAULTS) $(PYTEST) $(XDIST) -m long --durations=25 $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$status

# Remove this workspace's generations, tracking database, Prefect state and DVC cache/remote (asks first).
clean-runs: down
	@read -p "delete gens/, mlflow.db, mlartifacts/, .prefect/, dvc-remote/ and the DVC cache? [y/N] " a; \
	if [ "$$a" = y ]; then rm -rf gens mlflow.db mlartifacts .prefect dvc-remote .dvc/cache dvc.lock; \
	printf 'generations: {}\nlines: {}\n' > generations.yaml; fi
