# Convenience entry points; each installs what is missing first. See README.md.
BUILD_DIR ?= build
# The clang tree (preset `fuzz`): ASan + UBSan and libFuzzer's coverage instrumentation; the
# GoogleTest suite and the fuzz targets share it.
FUZZ_DIR = build-fuzz
JOBS ?= 2
PORT ?= 8787

.PHONY: deps test-deps build run test run-unit-asan npm-deps clean-root bench bench-scale bench-store bench-day bench-insights soak clean fuzz-build fuzz fuzz-replay \
	fuzz-known test-asan test-tsan check-sizes package test-package regen dist image mcpb release

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-test-deps.sh

# A configure that fails leaves no cache behind: the next make configures again instead of
# building a tree that has none of its makefiles ("No rule to make target 'Makefile'").
$(BUILD_DIR)/CMakeCache.txt:
	cmake --preset relwithdebinfo >/dev/null || { rm -f $@; exit 1; }

# What `make run` needs and nothing else: the agency-mcp executable (no test, fixture or
# benchmark target, and none of the test packages).
build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS) --target agency-mcp

# Starts the MCP server over Streamable HTTP on the built-in sample gateway
# (or on AGENCY_GATEWAY_URL when set).
run: build
	$(BUILD_DIR)/agency-mcp serve --http --listen 127.0.0.1:$(PORT)

npm-deps:
	@scripts/npm-deps.sh

# Every test. The GoogleTest suite runs once, under ASan + UBSan (build-fuzz/, clang), beside
# the product's own tests, the real MCP clients, conformance and the Debian package, which run
# against the plain build (build/: agency-mcp, the conformance fixture, the benchmark driver,
# and the one memory-bound test that needs an unsanitized build). ctest labels pick each set.
PLAIN_LABELS = ^(product|clients|conformance|package|image|memory)$$
test: deps test-deps npm-deps $(BUILD_DIR)/CMakeCache.txt $(FUZZ_DIR)/CMakeCache.txt
	cmake -S . -B $(BUILD_DIR) -DAGENCY_UNIT_TESTS=OFF >/dev/null
	cmake --build $(BUILD_DIR) -j$(JOBS)
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target agency_tests agency-mcp
	cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS) -L '$(PLAIN_LABELS)'
	$(MAKE) --no-print-directory run-unit-asan

# The GoogleTest suite in the sanitizer tree, as built (make test builds it first).
run-unit-asan:
	cd $(FUZZ_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j$(JOBS) -L '^unit$$'

# The Debian package (cmake/package.cmake): build/package/agency-mcp_<version>_<arch>.deb.
package: deps $(BUILD_DIR)/CMakeCache.txt
	@scripts/install-deps.sh dpkg-dev help2man
	@# Configured again: help2man, installed just now, gives the tree its manual-page target.
	cmake -S . -B $(BUILD_DIR) >/dev/null
	cmake --build $(BUILD_DIR) -j$(JOBS) --target agency-mcp agency_man_page
	cmake --build $(BUILD_DIR) --target package

# The release archive for machines without Debian's packages (issue 48):
# dist/agency-mcp-VERSION-linux-x86_64.tar.gz and its .sha256, from the built binary.
dist: build
	@scripts/install-deps.sh help2man
	scripts/make-dist.sh $(BUILD_DIR) dist

# The container image (issue 48): dist/agency-mcp-VERSION-oci.tar (`podman load -i` or
# `docker load -i`), assembled with umoci from Debian's files, no registry.
image: build
	@scripts/install-deps.sh help2man umoci
	scripts/make-image.sh $(BUILD_DIR) dist

# The MCP bundle (issue 48): dist/agency-mcp-VERSION-linux-x86_64.mcpb, validated and packed
# by the pinned @anthropic-ai/mcpb.
mcpb: build npm-deps
	@scripts/install-deps.sh help2man
	scripts/make-mcpb.sh $(BUILD_DIR) dist

# The release step: the archive, the image and the bundle in dist/, and dist/server.json
# listing the image and the bundle (with its SHA-256) exactly as made.
release: build npm-deps
	@scripts/install-deps.sh help2man umoci
	scripts/make-release.sh $(BUILD_DIR) dist

# Installs that package with apt into a fresh Debian 12 root and runs it (root only; `make test`
# runs it too). The debootstrap root is cached in $(BUILD_DIR)/package-test.
test-package: package test-deps
	cd $(BUILD_DIR) && ctest -L '^package$$' --output-on-failure

# Everything generated from the tool catalog (scripts/regen.sh): tool snapshots, docs/tools.md,
# the README's tool section. Run after adding or changing a tool; review the diff.
regen: deps test-deps $(FUZZ_DIR)/CMakeCache.txt $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS) --target agency-mcp
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target agency_tests
	scripts/regen.sh $(BUILD_DIR)/agency-mcp $(FUZZ_DIR)/agency_tests

# No production file over 600 lines and no function over 120 (scripts/check-sizes.sh; the
# function sizes from Universal Ctags, no build needed).
check-sizes:
	scripts/check-sizes.sh

# The install scripts proved on a fresh Debian 12 root (scripts/check-clean-root.sh; root only).
clean-root: test-deps
	scripts/check-clean-root.sh

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
bench-scale: deps test-deps
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	python3 bench/scale.py --build-dir build-release $(BENCH_SCALE_ARGS)

# State stores (docs/benchmarks.md, "State stores"): generate_article, run_seo_audit and
# get_client on SQLite and on a throwaway PostgreSQL cluster, with the store round trips per call.
bench-store: deps test-deps
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	python3 bench/store.py --build-dir build-release $(BENCH_STORE_ARGS)

# An agency's day (docs/benchmarks.md, "An agency's day"): 200 generation actions held 10 s each
# at the sample gateway, sent by 10 keys, while another key reads at 20/s; read p50/p99, the
# actions' completion times, refusals, threads and RSS, on one instance and on three behind
# HAProxy (deploy/haproxy.cfg) on a throwaway PostgreSQL cluster. BENCH_DAY_ARGS=--setups one
# for one instance only. Then one key against another (bench/fairness.py, "One key against
# another"): a key's 96 calls in flight beside another key's, with a 2 s gateway.
bench-day: deps test-deps
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp agency_bench_driver
	python3 bench/agency_day.py --build-dir build-release $(BENCH_DAY_ARGS)
	python3 bench/fairness.py --build-dir build-release $(BENCH_FAIRNESS_ARGS)

# Insights (docs/benchmarks.md, "Insights"; issue 46): triage_clients over 40 clients,
# find_quick_wins on 100,000 keyword rows against a bare paging read, and the everyday requests
# before and after the insight tools (calls and text bytes).
bench-insights: deps
	cmake --preset release >/dev/null
	cmake --build build-release -j$(JOBS) --target agency-mcp
	python3 bench/insights.py --build-dir build-release $(BENCH_INSIGHTS_ARGS)

# The soak (docs/benchmarks.md, "Soak"): reads, actions, tasks and confirmations at 16 in flight
# against the sample gateway with faults on, for SOAK_SECONDS (default 300); fails on a crash,
# an unanswered call, a duplicate POST or growing RSS.
SOAK_SECONDS ?= 300
soak: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j$(JOBS) --target agency-mcp
	SOAK_SECONDS=$(SOAK_SECONDS) BUILD_DIR=$(BUILD_DIR) python3 bench/soak.py $(SOAK_ARGS)

# --- Hardening (docs/security.md) -------------------------------------------------------------
FUZZ_SECONDS ?= 60
FUZZ_REPLAY_SECONDS ?= 20
FUZZ_TARGETS ?=
FUZZ_JOBS ?= $(JOBS)

$(FUZZ_DIR)/CMakeCache.txt:
	cmake --preset fuzz >/dev/null || { rm -f $@; exit 1; }

fuzz-build: deps test-deps $(FUZZ_DIR)/CMakeCache.txt
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target fuzz_targets

# Each fuzz target for FUZZ_SECONDS (FUZZ_TARGETS="page_walk tool_call" for some only); prints
# the executions and the result per target, fails on a crash.
fuzz: fuzz-build
	scripts/fuzz.sh run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# CI: each committed corpus replayed, then each target fuzzed for FUZZ_REPLAY_SECONDS;
# FUZZ_JOBS targets at a time (each one process).
fuzz-replay: fuzz-build
	FUZZ_JOBS=$(FUZZ_JOBS) scripts/fuzz.sh replay $(FUZZ_REPLAY_SECONDS) $(FUZZ_TARGETS)

# Which inputs of fuzz/crashes-known/ still crash (classes being fixed in the MCP core).
fuzz-known: fuzz-build
	scripts/fuzz.sh known $(FUZZ_TARGETS)

# The GoogleTest suite under ASan + UBSan, in the clang tree (also part of `make test`).
test-asan: deps test-deps $(FUZZ_DIR)/CMakeCache.txt
	cmake --build $(FUZZ_DIR) -j$(JOBS) --target agency_tests agency-mcp
	$(MAKE) --no-print-directory run-unit-asan

# The concurrency tests under ThreadSanitizer (gcc, build-tsan/): the test files that run
# threads against each other (tests/CMakeLists.txt lists them), every test in them.
build-tsan/CMakeCache.txt:
	cmake --preset tsan >/dev/null || { rm -f $@; exit 1; }

test-tsan: deps test-deps build-tsan/CMakeCache.txt
	cmake --build build-tsan -j$(JOBS) --target agency_tests
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j$(JOBS) -L '^unit$$'

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_DIR) build-tsan
