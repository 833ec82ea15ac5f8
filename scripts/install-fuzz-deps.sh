#!/usr/bin/env bash
# The Debian 12 packages the fuzz targets and the clang sanitizer builds need on top of the
# build's (make fuzz, make fuzz-replay, make test-asan, make test-tsan): clang 14 with its
# compiler-rt (ASan, UBSan, TSan, libFuzzer's runtime) and libFuzzer itself. Idempotent, like
# install-deps.sh, which does the work.
set -euo pipefail
exec "$(dirname "$0")/install-deps.sh" clang-14 libclang-rt-14-dev libfuzzer-14-dev llvm-14 "$@"
