# hatt — the two jobs a fresh machine needs, each creating its own environment.
#   make train   environment + hatt, then the main job: train, evaluate, export
#                (MODEL=cnn|rnn|transformer|han, TRAIN_ARGS="--epochs 3 ...")
#   make test    environment + hatt + test tools, then the whole test suite
# Offline: DATA=/path/to/aclImdb (folder or .tar.gz) or HATT_IMDB=... in the environment.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?=
MODEL ?= cnn
TRAIN_ARGS ?=
TORCH_VERSION ?= 2.13.0

.PHONY: install train test test-tf test-torch experiments bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# The main job: train the default model family on IMDB with its tuned preset
# (hatt/presets/MODEL.json; vocabulary from the training split, early stopping on
# the validation split), evaluate it once on the full test split, write
# runs/MODEL-*/ and export to saved_models/MODEL/.
train: install
	$(BIN)/hatt data $(if $(DATA),--data $(DATA)) --quiet
	$(BIN)/hatt train $(MODEL) $(if $(DATA),--data $(DATA)) $(TRAIN_ARGS)

# The test suite: every test under the TensorFlow backend, then the layer
# tests again under a second Keras backend (PyTorch, CPU build). The TF suite
# runs in one worker process per core (pytest-xdist): most of a test's time is
# single-threaded Python (tracing, building), so two cores finish it in about
# half the time (8.6 against 19.3 minutes here; 35 minutes by late 2026, 28.5
# since fit's step and the tokenizer are traced once; see the 30 slowest tests
# that each run prints, where CI time is to be won back). Whole files go to a
# worker (--dist loadfile), so a module's fixtures are made once, the heaviest
# files first (tests/conftest.py, by tests/module_seconds.json). (loadgroup's
# xdist_group marks do nothing under pytest 9.2: it keeps a test's id in
# Node._id, and pytest-xdist 3.8 still writes item._nodeid; single tests went
# out, and each worker made the same module fixtures again.)
test: test-tf test-torch

test-tf: install
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=30

$(VENV)/.torch: | $(VENV)/.installed
	$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)"
	touch $@

test-torch: install $(VENV)/.torch
	KERAS_BACKEND=torch $(BIN)/python -m pytest -q tests/layers

# Every experiment of the results table: baselines, the four families (each
# exported to saved_models/FAMILY/), ensembles, experiments/RESULTS.md and README.
experiments: install
	$(BIN)/python -m experiments.run_all $(if $(DATA),--data $(DATA))

bench: install
	$(BIN)/python -m experiments.benchmarks.padding $(if $(DATA),--data $(DATA))
	$(BIN)/python -m experiments.benchmarks.attention_overhead

lint: install
	$(BIN)/ruff format --check hatt tests experiments
	$(BIN)/ruff check hatt tests experiments

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
