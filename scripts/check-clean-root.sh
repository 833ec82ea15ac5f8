#!/usr/bin/env bash
# Proves the install scripts on a fresh Debian 12 root, not on this machine (which may hold
# packages somebody installed by hand): in a minimal debootstrap root (cached, see
# scripts/lib/debian_root.sh) with this tree copied in,
#   1. scripts/install-deps.sh, then `cmake --preset relwithdebinfo` (what `make run` does), then
#      one translation unit that includes every header from outside the project that the
#      product's code includes (base/ net/ state/ auth/ gateway/ server/ tools/ app/), compiled
#      with the product's include paths and definitions;
#   2. scripts/install-test-deps.sh, its --check (every command the tests use), and a configure
#      with the GoogleTest suite required.
# A package missing from a script fails here with the module, header or command it would have
# provided. Needs root (debootstrap, chroot). Usage: scripts/check-clean-root.sh [--first-run]
#
# --first-run instead times what a newcomer meets (the README's figure): in the fresh root,
# `make run` from nothing to an answer to MCP `initialize` on 127.0.0.1:8787 (no compiler cache,
# nothing installed), and checks that it built agency-mcp and no test target.
# Time (2 cores): ~40 s more the first time (debootstrap) and for each package not yet in the
# cache of downloads; then ~2-3 min, most of it dpkg unpacking (docs/design.md, "Tests and CI").
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "check-clean-root: needs root (debootstrap and chroot); CI runs it as root" >&2
  exit 1
fi
. scripts/lib/debian_root.sh
root=$debian_root_cache/clean-root.$$
logs=$debian_root_cache/clean-root-logs
mkdir -p "$logs"
for old in "$debian_root_cache"/clean-root.*; do debian_root_remove "$old"; done
trap 'debian_root_remove "$root"' EXIT
fail() { echo "check-clean-root: FAIL: $*" >&2; exit 1; }
phase() { echo "== clean root: $* ($((SECONDS - t0)) s)"; }
t0=$SECONDS

debian_root_make "$root"
phase "a fresh Debian 12 root"
mkdir -p "$root/src"
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -C "$root/src" -xf -

if [ "${1:-}" = --first-run ]; then
  start=$SECONDS
  # make itself is the one thing a minimal root lacks before `make run` can start (README).
  in_root "$root" bash -c 'apt-get update -qq && apt-get install -y -qq make >/dev/null &&
                           cd /src && make run' >"$logs/first-run.log" 2>&1 &
  runner=$!
  answer=""
  while kill -0 "$runner" 2>/dev/null; do
    answer=$(python3 - <<'PY' 2>/dev/null || true
import json, urllib.request
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "first-run", "version": "1"}}}).encode()
req = urllib.request.Request("http://127.0.0.1:8787/mcp", body, {
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
print(urllib.request.urlopen(req, timeout=2).read().decode())
PY
)
    [[ $answer == *serverInfo* ]] && break
    sleep 2
  done
  took=$((SECONDS - start))
  pkill -f "agency-mcp serve --http --listen 127.0.0.1:8787" 2>/dev/null || true
  wait "$runner" 2>/dev/null || true
  [[ $answer == *serverInfo* ]] || { tail -30 "$logs/first-run.log"; fail "make run never answered initialize"; }
  built=$(cd "$root/src/build" && ls agency-mcp agency_tests agency_memory_tests conformance_fixture \
            agency_bench_driver 2>/dev/null | tr '\n' ' ' || true)
  [ "$built" = "agency-mcp " ] || fail "make run built more than it runs: $built"
  echo "first run: make run answered initialize on 127.0.0.1:8787 after $took s ($((took / 60)) min $((took % 60)) s), building only agency-mcp"
  exit 0
fi

# 1. What `make run` needs.
in_root "$root" bash -c 'cd /src && scripts/install-deps.sh' >"$logs/install-deps.log" 2>&1 ||
  { tail -20 "$logs/install-deps.log"; fail "scripts/install-deps.sh did not install"; }
phase "scripts/install-deps.sh"
if ! in_root "$root" bash -c 'cd /src && cmake --preset relwithdebinfo' >"$logs/configure.log" 2>&1; then
  grep -E "No package|not found|Could NOT find|Could not find|required by|CMake Error" \
    "$logs/configure.log" | head -20 >&2
  fail "cmake --preset relwithdebinfo fails after scripts/install-deps.sh: a package is missing from it (above)"
fi
phase "cmake --preset relwithdebinfo"
python3 - "$root/src" <<'PY'
import json, re, shlex, sys, pathlib
src = pathlib.Path(sys.argv[1])
headers = set()
for d in ["base", "net", "state", "auth", "gateway", "server", "tools", "app"]:
    for f in sorted((src / d).rglob("*")):
        if f.suffix in (".cpp", ".hpp"):
            headers.update(re.findall(r'^\s*#\s*include\s*<([^>]+)>', f.read_text(), re.M))
flags = []
for entry in json.load(open(src / "build" / "compile_commands.json")):
    args = shlex.split(entry["command"])
    for i, a in enumerate(args):
        if a in ("-isystem", "-I"):
            pair = [a, args[i + 1]]
        elif a.startswith(("-I", "-D")) or a.startswith("-std="):
            pair = [a]
        else:
            continue
        if pair[-1].startswith("/src/build") or "AGENCY_" in pair[0]:
            continue  # the project's own
        if pair not in [flags[j:j + len(pair)] for j in range(len(flags))]:
            flags += pair
flags = [f.replace("-std=gnu++", "-std=c++").replace("-std=c++20", "-std=c++2b") for f in flags]
out = src / "build" / "third_party_headers.cpp"
out.write_text("// Every header from outside the project that the product includes.\n" +
               "".join(f"#include <{h}>\n" for h in sorted(headers)))
(src / "build" / "third_party_headers.flags").write_text(" ".join(shlex.quote(f) for f in flags))
print(f"{len(headers)} headers")
PY
if ! in_root "$root" bash -c 'cd /src/build && eval g++ $(cat third_party_headers.flags) -fsyntax-only third_party_headers.cpp' \
    >"$logs/headers.log" 2>&1; then
  grep -E "fatal error|error:" "$logs/headers.log" | head -10 >&2
  fail "a header the product includes is not installed by scripts/install-deps.sh (above)"
fi
phase "every third-party header of the product compiles"

# 2. What the tests need.
in_root "$root" bash -c 'cd /src && scripts/install-test-deps.sh' >"$logs/install-test-deps.log" 2>&1 ||
  { tail -20 "$logs/install-test-deps.log"; fail "scripts/install-test-deps.sh did not install"; }
in_root "$root" bash -c 'cd /src && scripts/install-test-deps.sh --check' >&2 ||
  fail "scripts/install-test-deps.sh leaves out what the tests use (above)"
if ! in_root "$root" bash -c 'cd /src && cmake -S . -B build-tests -DAGENCY_UNIT_TESTS=ON' \
    >"$logs/configure-tests.log" 2>&1; then
  grep -E "No package|not found|Could NOT find|Could not find|CMake Error" "$logs/configure-tests.log" | head -20 >&2
  fail "configuring the tests fails after scripts/install-test-deps.sh (above)"
fi
phase "scripts/install-test-deps.sh, the test tools, the tests' configure"
echo "check-clean-root: the install scripts hold on a fresh Debian 12 root ($((SECONDS - t0)) s)"
