# Every command in the README goes through here. `make test` works on a fresh machine: it builds .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCAL_RUN ?= .local/train-local
# train-local runs on the CPU: no GPU, and TensorFlow's C++ start-up lines kept out (pass either variable to
# override, e.g. `make train-local TF_CPP_MIN_LOG_LEVEL=0`). Level 3 hides the `failed call to cuInit` error
# of a machine without a CUDA driver; absl's lines from before it reads any setting need the filter below.
CUDA_VISIBLE_DEVICES ?= -1
TF_CPP_MIN_LOG_LEVEL ?= 3
export TF_STARTUP_NOISE := ^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR|I[0-9]{4} [0-9:.]+ +[0-9]+ [A-Za-z0-9_.]+:[0-9]+\] .*)$$
QUIET := CUDA_VISIBLE_DEVICES=$(CUDA_VISIBLE_DEVICES) TF_CPP_MIN_LOG_LEVEL=$(TF_CPP_MIN_LOG_LEVEL)
FILTER := 2>&1 | sed -uE "/$$TF_STARTUP_NOISE/d"
# pipefail: a failing trainer fails the target even though its output goes through the filter.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
LOCAL_TUNE ?= .local/tune-local

.PHONY: setup test lint train-local tune-local runs up destroy clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet pip==26.3
	$(BIN)/pip install --quiet -c constraints.txt -e '.[trainer,dev]'
	touch $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

# Data preparation and training end to end on generated data, on this machine's CPU.
train-local: setup
	rm -rf $(LOCAL_RUN)
	$(QUIET) $(BIN)/python -m trainer.create_tfrecords --source synthetic --count 400 --image-size 64 \
		--output $(LOCAL_RUN)/data $(FILTER)
	AIP_MODEL_DIR=$(LOCAL_RUN)/model AIP_CHECKPOINT_DIR=$(LOCAL_RUN)/checkpoints \
	AIP_TENSORBOARD_LOG_DIR=$(LOCAL_RUN)/tensorboard $(QUIET) \
	$(BIN)/python -m trainer.task --data-dir $(LOCAL_RUN)/data --image-size 64 --weights none \
		--epochs 3 --fine-tune-epochs 1 --batch-size 32 $(FILTER)
	@# Four images the model never saw (the same generator, another seed), named by their true class.
	mkdir -p $(LOCAL_RUN)/held-back
	$(QUIET) $(BIN)/python -c 'import sys, numpy as np; from PIL import Image; from trainer import sources; \
		rng = np.random.default_rng(2026); names = sources.SYNTHETIC_CLASSES; \
		[Image.fromarray(sources.synthetic_image(rng, i % 2, 64)).save(f"{sys.argv[1]}/{names[i % 2]}-{i}.png") \
		for i in range(4)]' $(LOCAL_RUN)/held-back $(FILTER)
	$(QUIET) $(BIN)/python -m trainer.predict --model-dir $(LOCAL_RUN)/model --top-k 2 $(LOCAL_RUN)/held-back $(FILTER)
	@echo "Model:       $(LOCAL_RUN)/model"
	@echo "Metrics:     $(LOCAL_RUN)/model/metrics.json"
	@echo "TensorBoard: $(BIN)/tensorboard --logdir $(LOCAL_RUN)/tensorboard"

# A 4-trial grid study of the built-in trainer on this machine's CPU: the tuning job resource's local runner.
tune-local: setup
	rm -rf $(LOCAL_TUNE)
	$(QUIET) $(BIN)/python benchmarks/local_study.py --output $(LOCAL_TUNE) $(FILTER)

STACK ?= local
# Every run of a stack, newest first, from the run.json records under its localDir or bucket (cloud stacks:
# your Application Default Credentials). Pass ARGS="--json" or ARGS="--plot runs.png" for more.
runs: setup
	$(BIN)/python -m infra.runs --stack $(STACK) $(ARGS)

# Needs the Pulumi CLI and, for cloud stacks, Google Cloud credentials (see README).
up: setup
	pulumi up --stack $(STACK)

destroy: setup
	pulumi destroy --stack $(STACK)

clean:
	rm -rf $(VENV) .local .pytest_cache .ruff_cache
