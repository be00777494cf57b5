# The two commands of the README are `make demo` and `make test`; both install first.
# Two virtualenvs: .venv-demo holds exactly the default install (ONNX Runtime, no torch), so the
# demo shows what a user gets; .venv holds both backends and the dev tools, for the tests.
PYTHON    ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
STAMP     := $(VENV)/.installed
DEMO_VENV ?= .venv-demo
DEMO_BIN  := $(DEMO_VENV)/bin
QUERY     ?= how does vaultsearch decide that a rebuild is needed
# The CPU build of torch for the huggingface extra, installed before it. Here pip's
# configuration finds this machine's CPU wheel; on an ordinary machine pass PyTorch's CPU
# index, e.g. make test TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu"
TORCH       ?= torch==2.13.0
TORCH_INDEX ?=

# hybrid latency is timed against these commits in the same run: the last without
# sentence vectors, and the last stop's release
LATENCY_AGAINST ?= bceccfd f66f957

.PHONY: setup setup-demo demo index test check bench bench-index bench-quality bench-latency bench-mcp bench-live bench-reliability bench-reliability-store bench-reliability-attacks bench-tune bench-confidence bench-embedding bench-vault-quality bench-code bench-mcp-size bench-mcp-memory bench-sources browser bench-screenshot bench-prefix bench-chunking bench-ideas bench-model-routes bench-route-throughput clean

setup: $(STAMP)

setup-demo: $(DEMO_VENV)/.installed

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH_INDEX) $(TORCH)
	$(BIN)/pip install --quiet -e '.[huggingface,dev]'
	touch $(STAMP)

$(DEMO_VENV)/.installed: pyproject.toml
	test -x $(DEMO_BIN)/python || $(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_BIN)/pip install --quiet --upgrade pip
	$(DEMO_BIN)/pip install --quiet -e .
	touch $@

demo: setup-demo
	$(DEMO_BIN)/vaultsearch index docs --index-dir index
	$(DEMO_BIN)/vaultsearch search "$(QUERY)" --vault docs --index-dir index --top-k 5

index: setup
	$(BIN)/vaultsearch index docs --index-dir index --config config.toml.example

# Two workers, each taking whole test files (module fixtures are built once): the tests
# isolate their folders, ports, caches and environment, so the two never meet.
PYTEST_WORKERS ?= 2

test: setup check browser
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

# The browser test drives the Index Console in the distribution's headless Chromium: installed
# here when this runs as root with apt-get; elsewhere the test is skipped and says how.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) \
	  || echo "could not install chromium: the browser test will be skipped"; \
	else echo "no chromium: the browser test will be skipped (apt-get install chromium chromium-driver)"; fi

check: setup
	$(BIN)/python scripts/check

bench: bench-index bench-quality bench-latency bench-mcp bench-live bench-embedding bench-vault-quality

bench-index: setup
	$(BIN)/python bench/index_vault.py

bench-quality: setup
	$(BIN)/python bench/quality.py

bench-model-routes: setup
	$(BIN)/python bench/model_routes.py

bench-route-throughput: setup
	$(BIN)/python bench/route_throughput.py

bench-latency: setup
	$(BIN)/python bench/latency.py $(foreach r,$(LATENCY_AGAINST),--against $(r))

bench-reliability-store: setup
	$(BIN)/python bench/reliability_store.py

bench-reliability-attacks: setup
	$(BIN)/python bench/reliability_attacks.py

bench-mcp: setup
	$(BIN)/python bench/mcp_latency.py

bench-mcp-size: setup
	$(BIN)/python bench/mcp_size.py

bench-live: setup
	$(BIN)/python bench/live_sync.py

bench-reliability: setup
	$(BIN)/python bench/reliability_inputs.py

bench-tune: setup
	$(BIN)/python bench/tune.py

bench-ideas: setup
	$(BIN)/python bench/tune_ideas.py

bench-prefix: setup
	$(BIN)/python bench/prefix_check.py

bench-chunking: setup
	$(BIN)/python bench/chunking_check.py

bench-embedding: setup
	$(BIN)/python bench/embedding_runtime.py

# Every candidate model file and runtime for the default (scripts/convert_model.py builds them).
bench-runtime-choice: setup
	$(BIN)/python bench/runtime_choice.py

bench-vault-quality: setup
	$(BIN)/python bench/vault_quality.py

bench-confidence: setup
	$(BIN)/python bench/confidence.py

bench-code: setup
	$(BIN)/python bench/code_search.py
bench-sources: setup
	$(BIN)/python bench/sources.py
bench-screenshot: setup browser
	$(BIN)/python bench/screenshot.py

bench-cancel: setup
	$(BIN)/python bench/cancel_index.py

bench-mcp-memory: setup
	$(BIN)/python bench/mcp_memory.py

clean:
	rm -rf $(VENV) $(DEMO_VENV) .pytest_cache .mypy_cache .ruff_cache

.PHONY: bench-toolbox bench-cancel bench-runtime-choice
bench-toolbox: setup
	$(BIN)/python bench/toolbox.py
