#!/usr/bin/env bash
# SIGTERM ends `agency-mcp serve --http` promptly even while a client holds a keep-alive
# connection open (operators restart it; a hung stop would stall every deploy).
# Usage: shutdown.sh AGENCY_MCP_BINARY
set -euo pipefail
bin=$1
. "$(cd "$(dirname "$0")" && pwd)/../lib/wait_for_url.sh"
log=$(mktemp)
state=$(mktemp -d)
cleanup() { [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$log" "$state"; }
trap cleanup EXIT
"$bin" serve --http --listen 127.0.0.1:0 --state-db "$state/state.db" 2>"$log" &
pid=$!
url=$(wait_for_url "$log")
port=${url##*:}; port=${port%%/*}
body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: keep-alive\r\nContent-Length: %s\r\n\r\n%s' \
  "$port" "${#body}" "$body" >&3
IFS= read -r -t 5 status_line <&3
echo "answer: $status_line"
case $status_line in HTTP/1.1\ 200*) ;; *) echo "initialize failed"; exit 1 ;; esac
start=$(date +%s%N)
kill -TERM "$pid"
# httplib waits out an idle keep-alive connection (5 s); before the fix it was 30 s.
for _ in $(seq 1 80); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  echo "still running 8 s after SIGTERM with an idle keep-alive connection open"; exit 1
fi
status=0; wait "$pid" || status=$?
pid=""
[ "$status" -eq 0 ] || { echo "exit status $status after SIGTERM (want 0)"; cat "$log"; exit 1; }
echo "stopped after $(( ($(date +%s%N) - start) / 1000000 )) ms"
exec 3<&-
