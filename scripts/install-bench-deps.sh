#!/usr/bin/env bash
# The Debian 12 packages `make bench` needs on top of the build's: gnuplot-nox draws
# docs/benchmarks.png, valgrind counts instructions per call (callgrind), python3 runs
# bench/run.py, Node.js and npm the TypeScript-SDK peer. Idempotent, like install-deps.sh,
# which does the work.
set -euo pipefail
exec "$(dirname "$0")/install-deps.sh" gnuplot-nox valgrind python3 nodejs npm
