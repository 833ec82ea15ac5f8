#!/usr/bin/env bash
# The container image (issue 48), as the documented set-up runs it: made by
# scripts/make-image.sh (no registry), loaded with podman, then `podman run -i IMAGE` answers
# initialize, tools/list and a tool call over stdio on the built-in sample gateway, and
# `podman run IMAGE serve --http` answers /readyz and an MCP request from this machine. Also:
# not root, the registry's name label, the size. On these machines podman needs runc, cgroupfs
# and explicit ulimits (crun refuses the host's hybrid cgroups).
# Usage: test_image.sh BUILD_DIR. Needs root, podman and umoci; exits 77 (skipped) otherwise.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ] || ! command -v podman >/dev/null || ! command -v umoci >/dev/null; then
  echo "SKIPPED: the image test needs root, podman and umoci (scripts/install-test-deps.sh)"
  exit 77
fi
podman=(podman --runtime runc --cgroup-manager=cgroupfs)
run=("${podman[@]}" run --rm --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
work=$build/image-test
rm -rf "$work"
mkdir -p "$work"
version=$("$build/agency-mcp" --version | awk '{print $NF}')
image=localhost/agency-mcp:$version
name=agency-mcp-image-test-$$
cleanup() {
  "${podman[@]}" rm -f "$name" >/dev/null 2>&1 || true
  "${podman[@]}" rmi -f "$image" >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$src/scripts/make-image.sh" "$build" "$work"
archive=$work/agency-mcp-$version-oci.tar
(cd "$work" && sha256sum -c "$(basename "$archive").sha256")
"${podman[@]}" rmi -f "$image" >/dev/null 2>&1 || true
"${podman[@]}" load -i "$archive"
"${podman[@]}" image inspect "$image" >"$work/inspect.json"
python3 - "$work/inspect.json" "$src/server.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))[0]
config = info["Config"]
assert config["User"] == "10001:10001", config["User"]
assert config["Entrypoint"] == ["/usr/bin/agency-mcp"], config["Entrypoint"]
name = json.load(open(sys.argv[2]))["name"]
assert config["Labels"]["io.modelcontextprotocol.server.name"] == name, config["Labels"]
size = info["Size"]
assert size <= 60 * 1024 * 1024, f"the image is {size} bytes, over 60 MB"
print(f"image: {size / 1e6:.1f} MB, user {config['User']}, labelled {name}")
PY

echo "== podman run -i (stdio)"
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"image-test","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_clients","arguments":{}}}' |
  "${run[@]}" -i "$image" >"$work/stdio.out" 2>"$work/stdio.err" || { cat "$work/stdio.err"; exit 1; }
python3 - "$work/stdio.out" <<'PY'
import json, sys
replies = {m["id"]: m for m in map(json.loads, open(sys.argv[1])) if "id" in m}
assert replies[1]["result"]["serverInfo"]["name"] == "agency-mcp", replies[1]
names = {t["name"] for t in replies[2]["result"]["tools"]}
assert {"list_clients", "list_keywords", "deploy_article"} <= names, names
rows = replies[3]["result"]["structuredContent"]["rows"]
assert len(rows) > 0 and all("id" in r for r in rows), replies[3]
print(f"stdio: {len(names)} tools, list_clients {len(rows)} rows")
PY

echo "== podman run IMAGE serve --http"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
"${run[@]}" -d --name "$name" --network host "$image" serve --http --listen "127.0.0.1:$port" >/dev/null
python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(150):
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
            ready = json.load(r); break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("no /readyz answer")
assert ready["status"] == "ready", ready
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "image-test", "version": "1"}}})
req = urllib.request.Request(base + "/mcp", data=body.encode(), method="POST", headers={
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
with urllib.request.urlopen(req, timeout=10) as r:
    text = r.read().decode()
line = [l for l in text.splitlines() if l.startswith("data: ")] or [text]
answer = json.loads(line[-1].removeprefix("data: "))
assert answer["result"]["serverInfo"]["name"] == "agency-mcp", answer
print("http: /readyz ready, initialize answered")
PY
"${podman[@]}" stop -t 10 "$name" >/dev/null
echo "PASS: $(basename "$archive") ($(du -h "$archive" | cut -f1)) loads and answers over stdio and HTTP"
