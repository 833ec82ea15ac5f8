#!/usr/bin/env bash
# Starts an MCP server over HTTP on an ephemeral loopback port and runs a conformance suite
# against it. Usage: run_conformance.sh SERVER_BINARY (conformance|conformance-next) ARGS...
# A SERVER_BINARY named agency-mcp is started as `agency-mcp serve --http`.
set -euo pipefail
server_bin=$1; suite_pkg=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/wait_for_url.sh"
clients="$here/../clients"
node="$clients/node_modules/.bin/node"
[ -x "$node" ] || { echo "npm test tools missing: run scripts/npm-deps.sh (make test does)"; exit 1; }
case $suite_pkg in
  conformance) cli="$clients/node_modules/@modelcontextprotocol/conformance/dist/index.js" ;;
  conformance-next) cli="$clients/node_modules/conformance-next/dist/index.js" ;;
  *) echo "unknown suite package $suite_pkg"; exit 2 ;;
esac
log=$(mktemp); out=$(mktemp -d)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$log" "$out"; }
trap cleanup EXIT
if [ "$(basename "$server_bin")" = agency-mcp ]; then
  "$server_bin" serve --http --listen 127.0.0.1:0 >"$log" 2>&1 &
else
  "$server_bin" --listen 127.0.0.1:0 >"$log" 2>&1 &
fi
pid=$!
url=$(wait_for_url "$log")
cd "$out"
PATH="$clients/node_modules/.bin:$PATH" "$node" "$cli" server --url "$url" "$@"
