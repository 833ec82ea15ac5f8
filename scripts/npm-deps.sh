#!/usr/bin/env bash
# Installs the pinned npm test tools (conformance suite, TypeScript SDK, Inspector CLI) from the
# committed lockfile. Skips the work when node_modules already matches the lockfile.
# With an argument (a folder of the repository, e.g. bench/peer): that folder's lockfile instead.
set -euo pipefail
cd "$(dirname "$0")/../${1:-tests/clients}"
stamp=node_modules/.lock-stamp
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then exit 0; fi
npm ci --no-audit --no-fund --loglevel=error >&2
cp package-lock.json "$stamp"
