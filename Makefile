# The two commands of the README are `make demo` and `make test`; both install first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
QUERY  ?= how does vaultsearch decide that a rebuild is needed

.PHONY: setup demo index test check bench bench-index bench-quality bench-latency bench-mcp bench-live bench-tune bench-confidence clean

setup: $(STAMP)

# torch is installed on its own first and pinned: the CPU build 2.13.0 is what this
# machine has; letting a dependency pull torch would fetch GBs of CUDA packages.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/vaultsearch index docs --index-dir index
	$(BIN)/vaultsearch search "$(QUERY)" --vault docs --index-dir index --top-k 5

index: setup
	$(BIN)/vaultsearch index docs --index-dir index --config config.toml.example

test: setup check
	$(BIN)/pytest -q

check: setup
	$(BIN)/python scripts/check

bench: bench-index bench-quality bench-latency bench-mcp bench-live

bench-index: setup
	$(BIN)/python bench/index_vault.py

bench-quality: setup
	$(BIN)/python bench/quality.py

bench-latency: setup
	$(BIN)/python bench/latency.py

bench-mcp: setup
	$(BIN)/python bench/mcp_latency.py

bench-live: setup
	$(BIN)/python bench/live_sync.py

bench-tune: setup
	$(BIN)/python bench/tune.py

bench-confidence: setup
	$(BIN)/python bench/confidence.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
