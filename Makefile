# Every command in the README goes through here. `make test` works on a fresh machine: it builds .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCAL_RUN ?= .local/train-local
LOCAL_TUNE ?= .local/tune-local

.PHONY: setup test lint train-local tune-local up destroy clean

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
	$(BIN)/python -m trainer.create_tfrecords --source synthetic --count 400 --image-size 64 \
		--output $(LOCAL_RUN)/data
	AIP_MODEL_DIR=$(LOCAL_RUN)/model AIP_CHECKPOINT_DIR=$(LOCAL_RUN)/checkpoints \
	AIP_TENSORBOARD_LOG_DIR=$(LOCAL_RUN)/tensorboard \
	$(BIN)/python -m trainer.task --data-dir $(LOCAL_RUN)/data --image-size 64 --weights none \
		--epochs 3 --fine-tune-epochs 1 --batch-size 32
	@echo "Model:       $(LOCAL_RUN)/model"
	@echo "Metrics:     $(LOCAL_RUN)/model/metrics.json"
	@echo "TensorBoard: $(BIN)/tensorboard --logdir $(LOCAL_RUN)/tensorboard"

# A 4-trial grid study of the built-in trainer on this machine's CPU: the tuning job resource's local runner.
tune-local: setup
	rm -rf $(LOCAL_TUNE)
	$(BIN)/python benchmarks/local_study.py --output $(LOCAL_TUNE)

# Needs the Pulumi CLI and, for cloud stacks, Google Cloud credentials (see README).
STACK ?= local
up: setup
	pulumi up --stack $(STACK)

destroy: setup
	pulumi destroy --stack $(STACK)

clean:
	rm -rf $(VENV) .local .pytest_cache .ruff_cache
