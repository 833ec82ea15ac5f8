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
checks=$src/tests/package/mcp_checks.py
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
image=docker.io/library/agency-mcp:$version  # as docker and podman load name it
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
python3 "$checks" stdio-input |
  "${run[@]}" -i "$image" >"$work/stdio.out" 2>"$work/stdio.err" || { cat "$work/stdio.err"; exit 1; }
python3 "$checks" stdio "$work/stdio.out"

echo "== podman run IMAGE serve --http"
port=$(python3 "$checks" free-port)
"${run[@]}" -d --name "$name" --network host "$image" serve --http --listen "127.0.0.1:$port" >/dev/null
python3 "$checks" http "$port"
"${podman[@]}" stop -t 10 "$name" >/dev/null
echo "PASS: $(basename "$archive") ($(du -h "$archive" | cut -f1)) loads and answers over stdio and HTTP"
