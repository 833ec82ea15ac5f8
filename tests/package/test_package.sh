#!/usr/bin/env bash
# The Debian package, installed as an operator would: `apt-get install ./agency-mcp_*.deb` in a
# fresh Debian 12 root (debootstrap, minbase), apt resolving the dependencies; then the
# installed binary runs (--version, tools/list over stdio as the service user, serve --http
# answering /readyz, following a keys file root rotates under the packaged layout, draining on
# SIGTERM), and purge removes the user and the state.
# Usage: test_package.sh BUILD_DIR. Needs root (debootstrap, chroot); exits 77 (skipped)
# otherwise. The minimal root and apt's downloads are cached outside the tree
# (scripts/lib/debian_root.sh), so only the first run on a machine waits for debootstrap.
set -euo pipefail
# Under pipefail, `producer | grep -q` fails at random: grep exits at its first match and the
# producer dies of SIGPIPE. Every check below greps a here-string instead.
build=$(cd "$1" && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: the package test needs root (debootstrap and chroot); CI runs it as root"
  exit 77
fi
for tool in debootstrap cpack chroot file dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-test-deps.sh"; exit 1; }
done
. "$(dirname "$0")/../../scripts/lib/debian_root.sh"

work=$build/package-test
root=$debian_root_cache/package-root.$$
mkdir -p "$work"
# A root left by a run that was killed.
for old in "$debian_root_cache"/package-root.*; do debian_root_remove "$old"; done
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  debian_root_remove "$root"
}
trap cleanup EXIT

echo "== the package (cpack in $build)"
rm -f "$build"/package/agency-mcp_*.deb
(cd "$build" && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$build"/package/agency-mcp_*.deb)
dpkg-deb --field "$deb" Package Version Architecture Depends Suggests Installed-Size
grep -q 'libc6' <<<"$(dpkg-deb --field "$deb" Depends)" || { echo "no shared-library dependencies"; exit 1; }
# What the package holds, before the slow part: the copyright file Debian policy asks for, every
# page the installed documents point to, and the per-instance example naming this package's
# binary (issue 31).
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
for f in copyright auth.md operations.md deploy.md examples/agency-mcp@.service; do
  grep -qx "./usr/share/doc/agency-mcp/$f" <<<"$contents" ||
    { echo "FAIL: the package has no /usr/share/doc/agency-mcp/$f"; exit 1; }
done
example=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/agency-mcp/examples/agency-mcp@.service)
grep -q '^ExecStart=/usr/bin/agency-mcp ' <<<"$example" && ! grep -q /usr/local <<<"$example" ||
  { echo "FAIL: the example agency-mcp@.service does not run /usr/bin/agency-mcp"; exit 1; }
copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/agency-mcp/copyright)
grep -q '^License: BSD-3-google' <<<"$copyright" || { echo "FAIL: the copyright file lacks RE2's terms"; exit 1; }

echo "== a fresh Debian 12 root"
debian_root_make "$root"

echo "== apt-get install ./$(basename "$deb")"
cp "$deb" "$root/tmp/"
in_root "$root" apt-get update -qq
in_root "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "./tmp/$(basename "$deb")" \
  >"$work/apt.log" 2>&1 || { tail -40 "$work/apt.log"; exit 1; }
grep -E '^(Setting up|Unpacking) ' "$work/apt.log" | sed 's/^/  /' | head -40

fail() { echo "FAIL: $*"; exit 1; }
echo "== what it installed"
version=$(in_root "$root" agency-mcp --version)
echo "  agency-mcp --version: $version"
[[ $version == *"$(sed -n 's/^project(agency_mcp VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../../CMakeLists.txt")"* ]] ||
  fail "unexpected version '$version'"
[ -x "$root/usr/bin/agency-mcp" ] || fail "no /usr/bin/agency-mcp"
[ -s "$root/usr/share/man/man1/agency-mcp.1.gz" ] || fail "no manual page"
grep -q 'drain-timeout' <<<"$(zcat "$root/usr/share/man/man1/agency-mcp.1.gz")" || fail "manual page lacks serve's options"
[ -f "$root/lib/systemd/system/agency-mcp.service" ] || fail "no systemd unit"
# docs/operations.md: a first install does not enable (or start) the unit.
[ ! -e "$root/etc/systemd/system/multi-user.target.wants/agency-mcp.service" ] ||
  fail "a first install enabled the unit: it would serve the sample data from the next boot"
for f in grafana-dashboard.json prometheus-alerts.yml; do
  [ -s "$root/usr/share/agency-mcp/$f" ] || fail "no /usr/share/agency-mcp/$f"
done
in_root "$root" getent passwd agency-mcp >/dev/null || fail "no agency-mcp user"
state_mode=$(in_root "$root" stat -c '%U %a' /var/lib/agency-mcp)
[ "$state_mode" = "agency-mcp 700" ] || fail "state directory: $state_mode"
env_mode=$(in_root "$root" stat -c '%U:%G %a' /etc/agency-mcp/agency-mcp.env /etc/agency-mcp | tr '\n' ' ')
[ "$env_mode" = "root:root 640 root:agency-mcp 750 " ] || fail "settings file and directory: $env_mode"
grep -q /etc/agency-mcp/agency-mcp.env <<<"$(in_root "$root" dpkg-query -W -f='${Conffiles}\n' agency-mcp)" ||
  fail "agency-mcp.env is not a conffile"

echo "== tools/list over stdio, as the service user, state in /var/lib/agency-mcp"
request() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$@"; }
answer=$({ request 1 initialize '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}'
          printf '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
          request 2 tools/list '{}'; } |
        in_root "$root" setpriv --reuid agency-mcp --regid agency-mcp --clear-groups \
          agency-mcp serve --state-db /var/lib/agency-mcp/state.db 2>"$work/stdio.log") ||
  { cat "$work/stdio.log"; fail "serve over stdio failed"; }
grep -q '"id":2' <<<"$answer" && grep -q '"list_clients"' <<<"$answer" ||
  { echo "$answer" | head -c 600; cat "$work/stdio.log"; fail "no tools/list answer"; }
echo "  $(echo "$answer" | grep -o '"name":"[a-z_]*"' | wc -l) tools listed"

echo "== keys under the package: created by root, given to the group agency-mcp (agency-mcp.env)"
keys=/etc/agency-mcp/keys
first_key=$(in_root "$root" agency-mcp keys add --keys-file $keys --name ops --scopes read 2>/dev/null)
in_root "$root" chgrp agency-mcp $keys
in_root "$root" chmod 0640 $keys

echo "== serve --http as the unit runs it: /healthz, /readyz, a key rotated while serving, SIGTERM"
chroot "$root" env -i PATH=/usr/bin:/bin AGENCY_STATE_DB=/var/lib/agency-mcp/state.db \
  AGENCY_KEYS_FILE=$keys setpriv --reuid agency-mcp --regid agency-mcp --clear-groups \
  agency-mcp serve --http --listen 127.0.0.1:0 2>"$work/http.log" &
server_pid=$!
. "$(dirname "$0")/../lib/wait_for_url.sh"
url=$(wait_for_url "$work/http.log") || { cat "$work/http.log"; fail "serve --http did not start"; }
port=${url##*:}; port=${port%%/*}
get() {  # GET path -> "status body"
  exec 5<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$1" "$port" >&5
  local reply
  reply=$(tr -d '\r' <&5); exec 5<&-
  echo "$(echo "$reply" | head -1 | cut -d' ' -f2) $(echo "$reply" | tail -1)"
}
for _ in $(seq 1 100); do get /healthz >/dev/null 2>&1 && break; sleep 0.1; done
live=$(get /healthz) || fail "no answer on port $port: $(cat "$work/http.log")"
ready=$(get /readyz)
echo "  /healthz: $live"; echo "  /readyz: $ready"
[[ $live == 200* ]] || fail "/healthz"
[[ $ready == 200*'"status":"ready"'* ]] || fail "/readyz"
initialize() {  # KEY -> the HTTP status of an initialize carrying it
  local body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
  exec 5<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nX-API-Key: %s\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$port" "$1" "${#body}" "$body" >&5
  local reply
  reply=$(tr -d '\r' <&5); exec 5<&-
  echo "$reply" | head -1 | cut -d' ' -f2
}
grep -E "(warning|error).*the keys file $keys" "$work/http.log" && fail "a warning about the packaged keys layout"
[ "$(initialize "$first_key")" = 200 ] || { cat "$work/http.log"; fail "the key was refused"; }
new_key=$(in_root "$root" agency-mcp keys rotate --keys-file $keys --name ops 2>/dev/null)
layout=$(in_root "$root" stat -c '%U:%G %a' $keys)
echo "  after keys rotate: $layout; the new key: $(initialize "$new_key"), the old one: $(initialize "$first_key")"
[ "$layout" = "root:agency-mcp 640" ] || fail "keys rotate left the file $layout"
[ "$(initialize "$new_key")" = 200 ] || { cat "$work/http.log"; fail "the rotated key was refused"; }
[ "$(initialize "$first_key")" = 401 ] || fail "the old key still works"
grep -q '0 key(s) now' "$work/http.log" && { cat "$work/http.log"; fail "the service lost its keys"; }
kill -TERM "$server_pid"
status=0; wait "$server_pid" || status=$?
server_pid=""
[ "$status" -eq 0 ] || { cat "$work/http.log"; fail "exit status $status after SIGTERM"; }
grep -q 'stopped cleanly' "$work/http.log" || { cat "$work/http.log"; fail "no clean stop"; }

echo "== apt-get purge"
in_root "$root" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q agency-mcp >"$work/purge.log" 2>&1 ||
  { tail -20 "$work/purge.log"; fail "purge failed"; }
[ ! -e "$root/usr/bin/agency-mcp" ] || fail "binary left after purge"
[ ! -e "$root/var/lib/agency-mcp" ] || fail "state left after purge"
in_root "$root" getent passwd agency-mcp >/dev/null && fail "user left after purge"
# The keys file the operator made stays, no longer owned by a group that is gone.
kept=$(in_root "$root" stat -c '%U:%G %a' $keys) || fail "the operator's keys file went with the purge"
[ "$kept" = "root:root 640" ] || fail "the kept keys file is $kept after purge"
echo "PASS"
