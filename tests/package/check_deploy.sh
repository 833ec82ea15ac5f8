#!/usr/bin/env bash
# The shipped deployment files, checked without installing anything (ctest deploy.shipped_files;
# the package test installs the .deb itself):
# - every systemd unit (deploy/agency-mcp.service, deploy/agency-mcp@.service, the packaged
#   deploy/debian/agency-mcp.service) filters system calls and rates an exposure of at most
#   1.5 by `systemd-analyze security --offline=yes` (3.5 before issue 31);
# - the per-instance unit the package ships as an example names the package's binary,
#   /usr/bin/agency-mcp, not /usr/local;
# - every build folder docs/deploy.md installs a binary from is made by a step the page shows
#   (`cmake --preset P` for that folder and `cmake --build` of it).
# Usage: check_deploy.sh SOURCE_DIR BUILD_DIR. Exits 77 (skipped) without systemd-analyze.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

command -v systemd-analyze >/dev/null || { echo "SKIPPED: no systemd-analyze (apt-get install systemd)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for unit in deploy/agency-mcp.service deploy/agency-mcp@.service deploy/debian/agency-mcp.service; do
  grep -q '^SystemCallFilter=@system-service$' "$src/$unit" || bad "$unit: no SystemCallFilter=@system-service"
  # A unit of its own name in a folder of its own: --offline reads the file as given.
  mkdir -p "$work/${unit%/*}"
  cp "$src/$unit" "$work/$unit"
  out=$(systemd-analyze security --offline=yes --threshold=15 "$work/$unit" 2>&1) && status=0 || status=$?
  score=$(echo "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  echo "$unit: exposure ${score:-?}"
  [ "$status" -eq 0 ] || bad "$unit: exposure ${score:-?} is above 1.5"
done

example=$build/package-examples/agency-mcp@.service
if [ ! -f "$example" ]; then
  bad "no $example (cmake/package.cmake writes it at configure time)"
else
  grep -q '^ExecStart=/usr/bin/agency-mcp ' "$example" || bad "$example: ExecStart is not /usr/bin/agency-mcp"
  ! grep -n '/usr/local' "$example" || bad "$example names /usr/local"
fi

# The presets' build folders, inherits followed: {"release": "build-release", ...}.
folders=$(python3 - "$src/CMakePresets.json" <<'EOF'
import json, sys
presets = {p["name"]: p for p in json.load(open(sys.argv[1]))["configurePresets"]}
def folder(name):
    p = presets[name]
    if "binaryDir" in p:
        return p["binaryDir"].replace("${sourceDir}/", "")
    for parent in p.get("inherits", []) if isinstance(p.get("inherits"), list) else [p.get("inherits")]:
        if parent:
            return folder(parent)
    return None
for name in presets:
    print(name, folder(name))
EOF
)
doc=$src/docs/deploy.md
for dir in $(grep -o '[A-Za-z0-9_.-]*build[A-Za-z0-9_-]*/agency-mcp' "$doc" | sed 's|/agency-mcp$||' | sort -u); do
  presets=$(echo "$folders" | awk -v d="$dir" '$2 == d {print $1}')
  made=0
  for p in $presets; do
    grep -q "cmake --preset $p\b" "$doc" && grep -q "cmake --build $dir\b" "$doc" && made=1
  done
  [ "$made" -eq 1 ] || bad "docs/deploy.md installs $dir/agency-mcp but shows no step that builds $dir (cmake --preset ${presets:-?} && cmake --build $dir)"
done

[ "$fail" -eq 0 ] && echo PASS
exit "$fail"
