# Convenience entry points; each installs what is missing first. See README.md.
BUILD_DIR ?= build
JOBS ?= 2
PORT ?= 8787

.PHONY: deps build run test npm-deps bench bench-scale bench-store soak clean fuzz-deps fuzz-build fuzz fuzz-replay \
	fuzz-known test-asan test-tsan check-sizes package test-package

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

# The Debian package (cmake/package.cmake): build/package/agency-mcp_<version>_<arch>.deb.
package: build
	cmake --build $(BUILD_DIR) --target package

# Installs that package with apt into a fresh Debian 12 root and runs it (root only; `make test`
# runs it too). The debootstrap root is cached in $(BUILD_DIR)/package-test.
test-package: build
	cd $(BUILD_DIR) && ctest -R '^package\.' --output-on-failure

# No production file over 600 lines and no function over 120 (scripts/check-sizes.sh; the
# function sizes by clang-tidy over the build's compile_commands.json).
check-sizes: build
	scripts/check-sizes.sh $(BUILD_DIR)

# The benchmark (docs/benchmarks.md): release build, bench-only packages, the peer's pinned npm
# packages, every scenario; regenerates docs/benchmarks.md and docs/benchmarks.png.
# BENCH_ARGS=--quick for a shorter trial run.
bench: deps
	@scripts/install-bench-deps.sh
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	@scripts/npm-deps.sh bench/peer
	python3 bench/run.py $(BENCH_ARGS)

# Scale-out throughput (docs/benchmarks.md, "Scale-out"): stateless read calls through HAProxy
# (deploy/haproxy.cfg) to three instances beside one instance; BENCH_SCALE_ARGS=--pg to put
# them on a throwaway PostgreSQL cluster.
bench-scale: deps
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	python3 bench/scale.py --build-dir build-release $(BENCH_SCALE_ARGS)

# State stores (docs/benchmarks.md, "State stores"): generate_article, run_seo_audit and
# get_client on SQLite and on a throwaway PostgreSQL cluster, with the store round trips per call.
bench-store: deps
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	python3 bench/store.py --build-dir build-release $(BENCH_STORE_ARGS)

# The soak (docs/benchmarks.md, "Soak"): reads, actions, tasks and confirmations at 16 in flight
# against the sample gateway with faults on, for SOAK_SECONDS (default 300); fails on a crash,
# an unanswered call, a duplicate POST or growing RSS.
SOAK_SECONDS ?= 300
soak: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS) --target agency-mcp
	SOAK_SECONDS=$(SOAK_SECONDS) BUILD_DIR=$(BUILD_DIR) python3 bench/soak.py $(SOAK_ARGS)

# --- Hardening (docs/security.md) -------------------------------------------------------------
# One clang tree (build-fuzz/, preset `fuzz`): address + undefined sanitizers, libFuzzer's
# coverage instrumentation; the fuzz targets and the ASan test run share it.
FUZZ_DIR = build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_REPLAY_SECONDS ?= 20
FUZZ_TARGETS ?=
# The tests that run threads against each other: stdio workers, HTTP streams, tasks, jobs.
TSAN_TESTS ?= ^(StdioTransport|StdioLifetime|HttpTransport|Tasks|AuditTasks|AuditJobs|AuditRestart|PlainServer|McpCore)\.|^PageWalk\.ManyThreads

fuzz-deps:
	@scripts/install-fuzz-deps.sh

$(FUZZ_DIR)/CMakeCache.txt:
	cmake --preset fuzz >/dev/null

fuzz-build: deps fuzz-deps $(FUZZ_DIR)/CMakeCache.txt
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target fuzz_targets

# Each fuzz target for FUZZ_SECONDS (FUZZ_TARGETS="page_walk tool_call" for some only); prints
# the executions and the result per target, fails on a crash.
fuzz: fuzz-build
	scripts/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# CI: each committed corpus replayed, then each target fuzzed for FUZZ_REPLAY_SECONDS.
fuzz-replay: fuzz-build
	scripts/fuzz.sh replay $(FUZZ_REPLAY_SECONDS) $(FUZZ_TARGETS)

# Which inputs of fuzz/crashes-known/ still crash (classes being fixed in the MCP core).
fuzz-known: fuzz-build
	scripts/fuzz.sh known $(FUZZ_TARGETS)

# The GoogleTest suite (and the small CLI checks) under ASan + UBSan, in the clang tree.
test-asan: deps fuzz-deps $(FUZZ_DIR)/CMakeCache.txt
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target agency_tests agency-mcp
	cd $(FUZZ_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j$(JOBS) -E '^(conformance|clients|bench|package)\.'

# The concurrency tests under ThreadSanitizer (gcc, build-tsan/; only the test binary).
build-tsan/CMakeCache.txt:
	cmake --preset tsan >/dev/null

test-tsan: deps build-tsan/CMakeCache.txt
	cmake --build build-tsan -j$(JOBS) --target agency_tests
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)'

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) build-tsan
