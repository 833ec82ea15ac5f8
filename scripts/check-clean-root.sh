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
#   3. the tests that run system tools through other tools (the `package` label: CPack with
#      `file` and dpkg-shlibdeps, debootstrap, apt), built and run inside the root.
# A package missing from a script fails here with the module, header or command it would have
# provided, and the package that has the command (this machine's dpkg). Needs root (debootstrap,
# chroot). Usage: scripts/check-clean-root.sh [--first-run | --without PACKAGE]
#
# --first-run instead times what a newcomer meets (the README's figures): in the fresh root,
# `make run` from nothing to an answer to MCP `initialize` on 127.0.0.1:8787 (no compiler cache,
# nothing installed), checks that it built agency-mcp and no test target, then `make test` in the
# same root. `--first-run --cold` leaves apt's cache of downloads out, so every package is
# downloaded as on a new machine.
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
# The packages that would have provided the commands a failing log says are missing: each
# command is looked up in this machine's dpkg database (where the tests pass), so the answer
# comes from what the tests ran, not from a list.
name_missing_packages() {
  local log=$1 cmd pkg found=()
  for cmd in $(grep -oE "([A-Za-z0-9_.+-]+) utility is not available|missing [A-Za-z0-9_.+-]+|[A-Za-z0-9_.+-]+: (command )?not found|Could not find [A-Za-z0-9_.+-]+" "$log" |
               sed -E 's/ utility is not available$//; s/^missing //; s/: (command )?not found$//; s/^Could not find //' |
               sort -u); do
    pkg=$(dpkg -S "bin/$cmd" 2>/dev/null | grep -E "/s?bin/$cmd\$" | head -1 | cut -d: -f1 || true)
    [ -n "$pkg" ] && found+=("$pkg (for $cmd)")
  done
  [ ${#found[@]} -eq 0 ] && return 0
  echo "check-clean-root: the tests need a package no install script installs: ${found[*]};" \
       "add it to scripts/install-test-deps.sh" >&2
}
# --without PACKAGE: removes one package from the root after the install scripts, to prove that
# this check fails naming it (docs/design.md, "Tests and CI").
remove_from_root() {
  in_root "$1" dpkg --purge --force-depends "$2" >/dev/null 2>&1 || fail "cannot remove $2 from the root"
  echo "== clean root: removed $2 after the install scripts (--without)"
}
# The compiler cache, npm's cache and the cached Debian root are this machine's, bound into the
# root, so that the build there compiles little and the package test's own root is unpacked
# from the same tarball (debian_root_remove unmounts them before anything is removed).
share_caches() {
  local root=$1 ccache_dir
  local home=${HOME:-/root}
  ccache_dir=$(ccache -k cache_dir 2>/dev/null || echo "$home/.cache/ccache")
  mkdir -p "$ccache_dir" "$home/.npm" "$root/root/.cache/ccache" "$root/root/.npm" "$root$debian_root_cache"
  mount --bind "$ccache_dir" "$root/root/.cache/ccache"
  mount --bind "$home/.npm" "$root/root/.npm"
  mount --bind "$debian_root_cache" "$root$debian_root_cache"
}
phase() { echo "== clean root: $* ($((SECONDS - t0)) s)"; }
t0=$SECONDS

debian_root_make "$root"
phase "a fresh Debian 12 root"
# The tree goes to the same path inside the root as it has here, so that a build there and the
# one `make test` makes here compile the same command lines and share the compiler cache.
src=$(pwd)
mkdir -p "$root$src"
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -C "$root$src" -xf -

if [ "${1:-}" = --first-run ]; then
  if [ "${2:-}" = --cold ]; then
    # Nothing downloaded before: apt fetches every package, as on a new machine.
    umount -l "$root/var/cache/apt/archives" 2>/dev/null || true
    echo "== clean root: apt's cache of downloads left out (--cold)"
  fi
  start=$SECONDS
  # make itself is the one thing a minimal root lacks before `make run` can start (README).
  in_root "$root" bash -c 'apt-get update -qq && apt-get install -y -qq make >/dev/null &&
                           cd "$1" && make run' _ "$src" >"$logs/first-run.log" 2>&1 &
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
  built=$(cd "$root$src/build" && ls agency-mcp agency_tests agency_memory_tests conformance_fixture \
            agency_bench_driver 2>/dev/null | tr '\n' ' ' || true)
  [ "$built" = "agency-mcp " ] || fail "make run built more than it runs: $built"
  echo "first run: make run answered initialize on 127.0.0.1:8787 after $took s ($((took / 60)) min $((took % 60)) s), building only agency-mcp"
  # Then the README's second command, in the same root, as a newcomer runs it next.
  start=$SECONDS
  if ! in_root "$root" bash -c 'cd "$1" && make test' _ "$src" >"$logs/first-test.log" 2>&1; then
    grep -E "tests passed|\*\*\*Failed|Failed|Error" "$logs/first-test.log" | tail -20 >&2
    name_missing_packages "$logs/first-test.log"
    fail "make test failed in the fresh root after $((SECONDS - start)) s ($logs/first-test.log)"
  fi
  took=$((SECONDS - start))
  grep -E "tests passed" "$logs/first-test.log" | tail -3
  echo "first run: make test passed after $took s ($((took / 60)) min $((took % 60)) s)"
  exit 0
fi

# 1. What `make run` needs.
in_root "$root" bash -c 'cd "$1" && scripts/install-deps.sh' _ "$src" >"$logs/install-deps.log" 2>&1 ||
  { tail -20 "$logs/install-deps.log"; fail "scripts/install-deps.sh did not install"; }
phase "scripts/install-deps.sh"
if ! in_root "$root" bash -c 'cd "$1" && cmake --preset relwithdebinfo' _ "$src" >"$logs/configure.log" 2>&1; then
  grep -E "No package|not found|Could NOT find|Could not find|required by|CMake Error" \
    "$logs/configure.log" | head -20 >&2
  fail "cmake --preset relwithdebinfo fails after scripts/install-deps.sh: a package is missing from it (above)"
fi
phase "cmake --preset relwithdebinfo"
python3 - "$root$src" "$src" <<'PY'
import json, re, shlex, sys, pathlib
src = pathlib.Path(sys.argv[1])
inside = sys.argv[2]  # the tree's path as the root sees it
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
        if pair[-1].startswith(inside + "/build") or "AGENCY_" in pair[0]:
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
if ! in_root "$root" bash -c 'cd "$1/build" && eval g++ $(cat third_party_headers.flags) -fsyntax-only third_party_headers.cpp' _ "$src" \
    >"$logs/headers.log" 2>&1; then
  grep -E "fatal error|error:" "$logs/headers.log" | head -10 >&2
  fail "a header the product includes is not installed by scripts/install-deps.sh (above)"
fi
phase "every third-party header of the product compiles"

# 2. What the tests need.
in_root "$root" bash -c 'cd "$1" && scripts/install-test-deps.sh' _ "$src" >"$logs/install-test-deps.log" 2>&1 ||
  { tail -20 "$logs/install-test-deps.log"; fail "scripts/install-test-deps.sh did not install"; }
in_root "$root" bash -c 'cd "$1" && scripts/install-test-deps.sh --check' _ "$src" >&2 ||
  fail "scripts/install-test-deps.sh leaves out what the tests use (above)"
if ! in_root "$root" bash -c 'cd "$1" && cmake -S . -B build-tests -DAGENCY_UNIT_TESTS=ON' _ "$src" \
    >"$logs/configure-tests.log" 2>&1; then
  grep -E "No package|not found|Could NOT find|Could not find|CMake Error" "$logs/configure-tests.log" | head -20 >&2
  fail "configuring the tests fails after scripts/install-test-deps.sh (above)"
fi
phase "scripts/install-test-deps.sh, the test tools, the tests' configure"

# 3. The tests that reach system tools through other tools (CPack runs `file` and
# dpkg-shlibdeps, debootstrap runs apt's helpers, the package test chroots and runs apt) run
# here, inside the root, with only what the scripts installed: a tool no script installs fails
# them as it would on a new machine. No list of those tools is kept by hand: a failure is
# searched for the command it missed, and this machine's dpkg names the package that has it.
[ "${1:-}" = --without ] && remove_from_root "$root" "${2:?--without PACKAGE}"
share_caches "$root"
if ! in_root "$root" bash -c 'cd "$1" && cmake -S . -B build -DAGENCY_UNIT_TESTS=OFF >/dev/null &&
                              cmake --build build -j2 --target agency-mcp agency_man_page &&
                              cd build && ctest -L "^package$" --output-on-failure' _ "$src" \
    >"$logs/package-tests.log" 2>&1; then
  grep -E "(\*\*\*Failed|FAIL|Error|error:|not available|not found|missing )" "$logs/package-tests.log" |
    head -20 >&2
  name_missing_packages "$logs/package-tests.log"
  fail "the package tests fail inside the root after the install scripts (above; $logs/package-tests.log)"
fi
phase "the package tests (ctest -L package) inside the root"
echo "check-clean-root: the install scripts hold on a fresh Debian 12 root ($((SECONDS - t0)) s)"
