# Every command in the README goes through here. `make test` works on a fresh machine: it builds .venv first.
# The Python .venv is made with: pyproject.toml's requires-python >=3.11,<3.13. python3 when it is one of these,
# else python3.12, else python3.11, found by name; `make setup PYTHON=/path/to/python3.12` picks one.
SUPPORTED_PYTHONS := 3.11 3.12
PYTHON_NAMES := python3 python3.12 python3.11
python_version = $(if $(strip $(1)),$(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null))
# For the error: each name (and PYTHON, when given) with the version it runs, if any.
found_pythons = $(foreach p,$(PYTHON_NAMES) $(filter-out $(PYTHON_NAMES),$(PYTHON)),$(p): $(or $(call python_version,$(p)),none);)
PYTHON ?= $(firstword $(foreach p,$(PYTHON_NAMES),$(if $(filter $(SUPPORTED_PYTHONS),$(call python_version,$(p))),$(p))))
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Every local run gets a folder of its own under the local stack's localDir (Pulumi.local.yaml), where
# `make runs` lists it with its run.json: train-local's under runs/, tune-local's under tuning/.
LOCAL_ROOT ?= .local/stack-local
RUN_STAMP := $(shell date -u +%Y%m%d-%H%M%S 2>/dev/null)
LOCAL_RUN ?= $(LOCAL_ROOT)/runs/train-local-$(RUN_STAMP)
# train-local runs on the CPU: no GPU, and TensorFlow's C++ start-up lines kept out (pass either variable to
# override, e.g. `make train-local TF_CPP_MIN_LOG_LEVEL=0`). Level 3 hides the `failed call to cuInit` error
# of a machine without a CUDA driver; absl's lines from before it reads any setting need the filter below.
CUDA_VISIBLE_DEVICES ?= -1
TF_CPP_MIN_LOG_LEVEL ?= 3
export TF_STARTUP_NOISE := ^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR|I[0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_.]+:[0-9]+\] .*)$$
QUIET := CUDA_VISIBLE_DEVICES=$(CUDA_VISIBLE_DEVICES) TF_CPP_MIN_LOG_LEVEL=$(TF_CPP_MIN_LOG_LEVEL)
# The filter ignores Ctrl-C (`trap '' INT`, inherited by sed as an ignored signal): it stays to pass on the
# line the interrupted command prints last (what was stopped and kept), then ends with its input.
FILTER := 2>&1 | (trap '' INT; exec sed -uE "/$$TF_STARTUP_NOISE/d")
# pipefail: a failing trainer fails the target even though its output goes through the filter.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
LOCAL_TUNE ?= $(LOCAL_ROOT)/tuning/tune-local-$(RUN_STAMP)

.PHONY: setup check-python check-venv test test-fast test-tf lint lock train-local tune-local predict-local serve-local preflight plan runs leftovers up destroy clean

setup: check-venv $(STAMP)

# An existing .venv made with another Python (by hand, or before check-python) stops here, not in a test run.
check-venv:
	@if [ -e $(BIN)/python ] || [ -L $(BIN)/python ]; then \
	  version=$$($(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); \
	  case " $(SUPPORTED_PYTHONS) " in \
	    *" $$version "*) ;; \
	    *) found=$${version:+Python $$version}; \
	       echo "$(VENV) was made with $${found:-a Python that no longer runs}" \
	         "($(BIN)/python); this project needs 3.11 or 3.12 (pyproject.toml: >=3.11,<3.13)." \
	         "Remove it and make it again: rm -rf $(VENV) && make setup" \
	         "(or make setup PYTHON=/path/to/python3.12)" >&2; exit 1;; \
	  esac; \
	fi

# Stops, naming the versions it needs and what it found, unless PYTHON is a supported version.
check-python:
	@version="$(call python_version,$(PYTHON))"; \
	case " $(SUPPORTED_PYTHONS) " in \
	  *" $$version "*) echo "Python $$version: $(PYTHON)";; \
	  *) echo "make setup needs Python 3.11 or 3.12 (pyproject.toml: >=3.11,<3.13). Found $(found_pythons)" \
	       "Install Python 3.12 or 3.11 (your system's python3.12 package, or pyenv install 3.12)," \
	       "or name one: make setup PYTHON=/path/to/python3.12" >&2; exit 1;; \
	esac

# uv (pinned: UV_VERSION) installs the pinned set: measured on this 2-core machine, 30-60 s against pip's 4 min
# from an empty cache (docs/development.md). Compiled to bytecode as pip does, so the suite's many processes do
# not each compile TensorFlow's modules on first import. The .venv is a plain venv with pip in it.
UV_VERSION := 0.13.9
$(STAMP): pyproject.toml constraints.txt
	@$(MAKE) --no-print-directory check-python PYTHON="$(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt -e '.[trainer,serving,dev]'
	touch $(STAMP)

# ruff, then the type checker (mypy, pinned; its settings and the packages it reads as untyped are in
# pyproject.toml [tool.mypy]): infra/ and trainer/, strictly for infra/vertex/ and infra/dynamic/. Then zizmor
# (pinned), the workflows' and Dependabot config's security audit, offline: no GitHub API calls, no token.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/zizmor --offline --no-progress .github/workflows/ .github/dependabot.yml

# The images' Python requirements, locked: each input here is compiled (uv, pinned: UV_VERSION) into the
# `.lock` beside it, with every dependency at the version constraints.txt pins and the sha256 of each of its
# files; the images install the lock with `pip install --require-hashes` (docs/development.md, "Locks").
# Universal (any platform, Python 3.11 and up: markers decide). Left out: tensorflow, which the images' CUDA
# base image brings (pip refuses, in hash mode, to fetch a requirement the lock does not hash), and
# setuptools, which that tensorflow requires and the dev environment takes from Python's own venv. Add a new
# image's requirements.txt to LOCK_INPUTS and run `make lock`.
LOCK_INPUTS := trainer/requirements.txt serving/requirements.txt infra/guard/requirements.txt
LOCK_EXCLUDED := tensorflow setuptools
lock: setup
	@for input in $(LOCK_INPUTS); do \
	  echo "$$input -> $${input%.txt}.lock"; \
	  $(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	    --constraint constraints.txt $(addprefix --no-emit-package ,$(LOCK_EXCLUDED)) \
	    --custom-compile-command "make lock" --output-file $${input%.txt}.lock $$input || exit 1; \
	done

# The suite on four workers (pytest-xdist) for two cores: many tests wait (on a trainer, a clock, a poll, a file
# lock), and the extra workers fill that time (sampled on five: both cores busy throughout; four ran as fast).
# The tests that train (marked `tensorflow` by rule, tests/tensorflow_rule.py) are grouped so each trained model
# is built once, and their groups go first, in the rule's order (xdist would otherwise reorder groups by their
# number of tests). docs/development.md says which target to run when. WORKERS=0 runs in one process.
WORKERS ?= 4
PARALLEL := -n $(WORKERS) --dist loadgroup --no-loadscope-reorder

# Everything, as CI runs it (.ci/run calls this).
test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(PARALLEL)

# The inner loop: everything but the tests that train.
test-fast: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest $(PARALLEL) -m "not tensorflow"

# Only the tests that train, on the same workers (each trained model is still built once).
test-tf: setup
	$(BIN)/python -m pytest $(PARALLEL) -m tensorflow

# Data preparation and training end to end on generated data, on this machine's CPU.
train-local: setup
	rm -rf $(LOCAL_RUN)
	$(QUIET) $(BIN)/python -m trainer.create_tfrecords --source synthetic --count 400 --image-size 64 \
		--output $(LOCAL_RUN)/data $(FILTER)
	@# The training job resource's local runner: AIP_* dirs under the run's folder, and its run.json there.
	$(QUIET) $(BIN)/python -m infra.local_runs train --run-dir $(LOCAL_RUN) -- \
		--data-dir $(abspath $(LOCAL_RUN))/data --image-size 64 --weights none \
		--epochs 3 --fine-tune-epochs 1 --batch-size 32 $(FILTER)
	@# Four images the model never saw (the same generator, another seed), named by their true class.
	mkdir -p $(LOCAL_RUN)/held-back
	$(QUIET) $(BIN)/python -c 'import sys, numpy as np; from PIL import Image; from trainer import loaders, sources; \
		rng = np.random.default_rng(2026); names = sources.SYNTHETIC_CLASSES; \
		[Image.fromarray(loaders.synthetic_image(rng, i % 2, 64)).save(f"{sys.argv[1]}/{names[i % 2]}-{i}.png") \
		for i in range(4)]' $(LOCAL_RUN)/held-back $(FILTER)
	$(QUIET) $(BIN)/python -m trainer.predict --model-dir $(LOCAL_RUN)/model --top-k 2 $(LOCAL_RUN)/held-back $(FILTER)
	@echo "Model:       $(LOCAL_RUN)/model"
	@echo "Metrics:     $(LOCAL_RUN)/model/metrics.json"
	@echo "TensorBoard: $(BIN)/tensorboard --logdir $(LOCAL_RUN)/logs"
	@echo "All runs:    make runs"

# A 4-trial grid study of the built-in trainer on this machine's CPU: the tuning job resource's local runner.
tune-local: setup
	rm -rf $(LOCAL_TUNE)
	$(QUIET) $(BIN)/python -m infra.local_runs tune --run-dir $(LOCAL_TUNE) $(FILTER)
	@echo "All runs:    make runs"

# A batch prediction of a folder of JPEG/PNG images on this machine (the local batch job: the prediction server
# of serving/, as Vertex runs the serving image), then its results table. MODEL_DIR=DIR names a model; default:
# the newest local one (make train-local's, or the local stack's).
predict-local: setup
	@if [ -z "$(IMAGES)" ]; then echo "make predict-local needs IMAGES=DIR, a folder of JPEG/PNG images," \
	  "e.g. make predict-local IMAGES=examples/held-back" >&2; exit 2; fi
	$(QUIET) $(BIN)/python -m infra.local_runs batch --images $(IMAGES) $(if $(MODEL_DIR),--model-dir $(MODEL_DIR)) $(FILTER)

# The prediction server (python -m serving) on 127.0.0.1:$(PORT) for the newest local model (or MODEL_DIR=DIR),
# in the foreground until Ctrl-C; it prints a curl line to try it with.
PORT ?= 8080
serve-local: setup
	@$(QUIET) $(BIN)/python -m infra.local_runs serve --port $(PORT) $(if $(MODEL_DIR),--model-dir $(MODEL_DIR)) $(FILTER)

STACK ?= local

# Read-only: everything a cloud stack's `pulumi up` needs (credentials, project, billing, IAM, budget rights, APIs,
# kill-switch role, GPU quota per job shape, Cloud Build region), one line each with its fix; exit 1 if not ready.
# No Pulumi CLI needed. JSON: .venv/bin/python -m infra.preflight --stack $(STACK) --json
preflight: setup
	$(BIN)/python -m infra.preflight --stack $(STACK)

# Offline: what `pulumi up` would create (each resource's type and name) and what its jobs may cost (each shape's
# hourly price, each job's worst case); every configuration problem at once. No credentials, no Pulumi CLI.
# JSON: .venv/bin/python -m infra.plan --stack $(STACK) --json
plan: setup
	$(BIN)/python -m infra.plan --stack $(STACK)

# Every run of a stack, newest first, from the run.json records under its localDir or bucket (cloud stacks:
# your Application Default Credentials). With no STACK: the local stack, whose localDir also holds the runs of
# train-local and tune-local. Pass ARGS="--json" or ARGS="--plot runs.png" for more.
runs: setup
	$(BIN)/python -m infra.runs --stack $(STACK) $(ARGS)

# Read-only unless ARGS="--cancel": what of the stack still bills (live jobs of every kind in every region the
# stack names, buckets and repository with size and monthly price, TensorBoards, models, the kill-switch
# function), one line each with the command that removes it. Exit 0 nothing bills, 1 something bills, 2 something
# could not be read. ARGS="--json", "--all-regions" or "--cancel" (cancels live jobs, never deletes storage).
leftovers: setup
	$(BIN)/python -m infra.leftovers --stack $(STACK) $(ARGS)

# Needs the Pulumi CLI and, for cloud stacks, Google Cloud credentials (see README).
up: setup
	pulumi up --stack $(STACK)

destroy: setup
	pulumi destroy --stack $(STACK)

clean:
	rm -rf $(VENV) .local .pytest_cache .ruff_cache
