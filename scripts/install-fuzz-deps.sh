#!/usr/bin/env bash
# The packages the fuzz targets and the sanitizer builds need (clang 14, its compiler-rt and
# libFuzzer): part of the test packages (scripts/install-test-deps.sh, which does the work).
set -euo pipefail
exec "$(dirname "$0")/install-test-deps.sh" "$@"
