#!/usr/bin/env bash
# The release archive (issue 48), as a user without Debian's packages meets it: made by
# scripts/make-dist.sh from the built binary, unpacked into a fresh Debian 12 root and a fresh
# Debian 13 root (minbase: none of the libraries it ships), where it answers --version, its
# manual page reads, stdio answers initialize, tools/list and a tool call on the built-in sample
# gateway, and serve --http answers /readyz and an MCP request from this machine.
# Usage: test_dist.sh BUILD_DIR. Needs root (chroot); exits 77 (skipped) otherwise.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: the archive test needs root (chroot); CI runs it as root"
  exit 77
fi
. "$src/scripts/lib/debian_root.sh"
work=$build/dist-test
rm -rf "$work"
mkdir -p "$work"
"$src/scripts/make-dist.sh" "$build" "$work"
archive=$(ls "$work"/agency-mcp-*-linux-x86_64.tar.gz)
name=$(basename "$archive" .tar.gz)
(cd "$work" && sha256sum -c "$name.tar.gz.sha256")
version=$("$build/agency-mcp" --version)

root=""
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null || true; fi
  if [ -n "$root" ]; then debian_root_remove "$root"; fi
}
trap cleanup EXIT

for release in bookworm trixie; do
  echo "== a fresh $release root"
  root=$debian_root_cache/dist-root.$release.$$
  debian_root_remove "$root" 2>/dev/null || true
  debian_root_make "$root" "$release"
  tar -C "$root/opt" -xzf "$archive"
  cmd=/opt/$name/bin/agency-mcp
  # The root has none of the libraries: without the launcher the binary cannot start.
  if in_root "$root" "/opt/$name/lib/agency-mcp" --version >/dev/null 2>&1; then
    echo "FAIL: the binary ran without the shipped libraries: the root is not fresh"; exit 1
  fi
  got=$(in_root "$root" "$cmd" --version)
  [ "$got" = "$version" ] || { echo "FAIL: --version says '$got', not '$version'"; exit 1; }
  page=$(in_root "$root" sh -c "zcat /opt/$name/share/man/man1/agency-mcp.1.gz")
  grep -q '^\.TH AGENCY-MCP' <<<"$page" || { echo "FAIL: no manual page"; exit 1; }

  echo "== stdio in $release"
  printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"dist-test","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_clients","arguments":{}}}' \
    >"$root/tmp/in.jsonl"
  in_root "$root" sh -c "$cmd serve --state-db /tmp/state.db </tmp/in.jsonl" >"$work/stdio.$release.out" \
    2>"$work/stdio.$release.err" || { cat "$work/stdio.$release.err"; exit 1; }
  python3 - "$work/stdio.$release.out" <<'PY'
import json, sys
replies = {m["id"]: m for m in map(json.loads, open(sys.argv[1])) if "id" in m}
assert replies[1]["result"]["serverInfo"]["name"] == "agency-mcp", replies[1]
names = {t["name"] for t in replies[2]["result"]["tools"]}
assert {"list_clients", "list_keywords", "generate_article"} <= names, names
rows = replies[3]["result"]["structuredContent"]["rows"]
assert len(rows) > 0 and all("id" in r for r in rows), replies[3]
print(f"stdio: {len(names)} tools, list_clients {len(rows)} rows")
PY

  echo "== serve --http in $release"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  in_root "$root" "$cmd" serve --http --listen "127.0.0.1:$port" --state-db /tmp/http.db \
    >"$work/http.$release.log" 2>&1 &
  server_pid=$!
  python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(100):
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
            ready = json.load(r); break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("no /readyz answer")
assert ready["status"] == "ready", ready
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "dist-test", "version": "1"}}})
req = urllib.request.Request(base + "/mcp", data=body.encode(), method="POST", headers={
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
with urllib.request.urlopen(req, timeout=10) as r:
    text = r.read().decode()
line = [l for l in text.splitlines() if l.startswith("data: ")] or [text]
answer = json.loads(line[-1].removeprefix("data: "))
assert answer["result"]["serverInfo"]["name"] == "agency-mcp", answer
print("http: /readyz ready, initialize answered")
PY
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  debian_root_remove "$root"
  root=""
done
echo "PASS: $(basename "$archive") ($(du -h "$archive" | cut -f1)) runs in fresh Debian 12 and 13 roots"
