#!/usr/bin/env bash
# Runs a frozen requirement set of the pinned conformance suite (conformance-next
# --requirements REVISION): the product (`agency-mcp serve --http`) and the fixture server on
# ephemeral loopback ports, each scenario against the one it needs (run_requirements.mjs).
# Usage: run_requirements.sh AGENCY_MCP FIXTURE REVISION [RESULTS_DIR]
# RESULTS_DIR keeps the suite's results (requirements_table.mjs reads them); by default they
# go to a temporary folder, removed at the end.
set -euo pipefail
product_bin=$1; fixture_bin=$2; revision=$3; results=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait_for_url.sh"
node="$here/../clients/node_modules/.bin/node"
[ -x "$node" ] || { echo "npm test tools missing: run scripts/npm-deps.sh (make test does)"; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
"$product_bin" serve --http --listen 127.0.0.1:0 --state-db "$tmp/state.db" >"$tmp/product.log" 2>&1 &
pids+=($!)
"$fixture_bin" --listen 127.0.0.1:0 >"$tmp/fixture.log" 2>&1 &
pids+=($!)
product_url=$(wait_for_url "$tmp/product.log")
fixture_url=$(wait_for_url "$tmp/fixture.log")
[ -n "$results" ] || results="$tmp/results"
rm -rf "$results"; mkdir -p "$results"
cd "$tmp"
"$node" "$here/run_requirements.mjs" "$revision" "$product_url" "$fixture_url" "$results"
