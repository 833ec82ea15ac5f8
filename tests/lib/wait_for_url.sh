# Sourced by the test scripts that start a server in the background.
# wait_for_url LOG: prints the first loopback MCP URL the server wrote to LOG, waiting up to
# 10 s; otherwise prints the log to stderr and fails.
wait_for_url() {
  local log=$1 url=""
  for _ in $(seq 1 100); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" | head -1 || true)
    if [ -n "$url" ]; then echo "$url"; return 0; fi
    sleep 0.1
  done
  echo "server did not start:" >&2
  cat "$log" >&2
  return 1
}
