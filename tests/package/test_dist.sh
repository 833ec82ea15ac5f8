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
checks=$src/tests/package/mcp_checks.py
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
  python3 "$checks" stdio-input >"$root/tmp/in.jsonl"
  in_root "$root" sh -c "$cmd serve --state-db /tmp/state.db </tmp/in.jsonl" >"$work/stdio.$release.out" \
    2>"$work/stdio.$release.err" || { cat "$work/stdio.$release.err"; exit 1; }
  python3 "$checks" stdio "$work/stdio.$release.out"

  echo "== serve --http in $release"
  port=$(python3 "$checks" free-port)
  in_root "$root" "$cmd" serve --http --listen "127.0.0.1:$port" --state-db /tmp/http.db \
    >"$work/http.$release.log" 2>&1 &
  server_pid=$!
  python3 "$checks" http "$port"
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  debian_root_remove "$root"
  root=""
done
echo "PASS: $(basename "$archive") ($(du -h "$archive" | cut -f1)) runs in fresh Debian 12 and 13 roots"
