# Convenience entry points; each installs what is missing first. See README.md.
BUILD_DIR ?= build
JOBS ?= 2
PORT ?= 8787

.PHONY: deps build run test npm-deps bench soak clean

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/CMakeCache.txt:
	cmake --preset relwithdebinfo >/dev/null

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS)

# Starts the MCP server over Streamable HTTP on the built-in sample gateway
# (or on AGENCY_GATEWAY_URL when set).
run: build
	$(BUILD_DIR)/agency-mcp serve --http --listen 127.0.0.1:$(PORT)

npm-deps:
	@scripts/npm-deps.sh

# Every test: unit and integration (GoogleTest via ctest) and the real-client suites.
test: build npm-deps
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

# The benchmark (docs/benchmarks.md): release build, bench-only packages, the peer's pinned npm
# packages, every scenario; regenerates docs/benchmarks.md and docs/benchmarks.png.
# BENCH_ARGS=--quick for a shorter trial run.
bench: deps
	@scripts/install-bench-deps.sh
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	@scripts/npm-deps.sh bench/peer
	python3 bench/run.py $(BENCH_ARGS)

# The soak (docs/benchmarks.md, "Soak"): reads, actions, tasks and confirmations at 16 in flight
# against the sample gateway with faults on, for SOAK_SECONDS (default 300); fails on a crash,
# an unanswered call, a duplicate POST or growing RSS.
SOAK_SECONDS ?= 300
soak: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS) --target agency-mcp
	SOAK_SECONDS=$(SOAK_SECONDS) BUILD_DIR=$(BUILD_DIR) python3 bench/soak.py $(SOAK_ARGS)

clean:
	rm -rf $(BUILD_DIR)
