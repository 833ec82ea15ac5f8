#!/usr/bin/env bash
# Builds the MCP Apps views (views/) into OUTDIR: the pinned npm packages of views/package-lock.json
# (npm ci, skipped when node_modules matches the lockfile), then views/build.mjs, which bundles
# each view into one self-contained HTML file and refuses one of 200 KB or more. The build runs
# it (CMakeLists.txt); usage: scripts/build-views.sh OUTDIR
set -euo pipefail
out=$(realpath -m "$1")
here=$(cd "$(dirname "$0")" && pwd)
"$here/npm-deps.sh" views
cd "$here/../views"
node build.mjs "$out"
