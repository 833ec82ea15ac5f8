#!/bin/bash
# The MCP core's library holds no HTTP, JWT or database code: no symbol of httplib, cjose,
# SQLite or libpq is defined or referenced in it. The same pattern must find httplib in the
# transport library, or the check proves nothing.
#   core_symbols.sh <libagency_core.a> <libagency_transport.a>
set -euo pipefail
pattern='httplib::|\bsqlite3_|\bcjose_|\bPQ[a-z]+\b'
core=$(nm -C "$1")
transport=$(nm -C "$2")
if ! grep -qE "$pattern" <<<"$transport"; then
  echo "the pattern finds nothing in $2 either: the check is broken" >&2
  exit 1
fi
if found=$(grep -E "$pattern" <<<"$core"); then
  echo "the MCP core ($1) holds HTTP, JWT or database code:" >&2
  head -20 <<<"$found" >&2
  exit 1
fi
echo "the core holds no httplib, cjose, SQLite or libpq symbol"
