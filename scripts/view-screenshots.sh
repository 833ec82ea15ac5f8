#!/usr/bin/env bash
# Photographs the four MCP Apps views (issue 34) in the light and the dark host theme, as the
# browser suite renders them: docs/views/<view>-<light|dark>.png (rankings, audit, approve,
# client-overview), shown in the README. It runs tests/clients/views.test.mjs (headless Debian
# chromium, the real binary on a sample gateway) with AGENCY_VIEW_SCREENSHOTS set, so a picture
# is only kept from a run whose checks pass. Usage: scripts/view-screenshots.sh [OUTDIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/docs/views}")
build=${BUILD_DIR:-$root/build}
"$root/scripts/npm-deps.sh"
[ -f "$build/CMakeCache.txt" ] || (cd "$root" && cmake --preset relwithdebinfo >/dev/null)
cmake --build "$build" -j"${JOBS:-2}" --target agency-mcp
AGENCY_MCP_BIN="$build/agency-mcp" AGENCY_VIEW_SCREENSHOTS="$out" \
  "$root/tests/clients/node_modules/.bin/node" --test "$root/tests/clients/views.test.mjs"
ls -l "$out"/*-light.png "$out"/*-dark.png
