#!/usr/bin/env bash
# serve's --oauth-* options: each mistake stops the server with one message naming the option
# to fix, before anything starts; with OAuth configured the server may listen beyond loopback.
set -u
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
refused() {  # refused <expected text> <args...>
    local want=$1; shift
    local out
    out=$("$bin" serve --state-db :memory: "$@" </dev/null 2>&1) && fail "started: $*"
    echo "$out" | grep -qF -- "$want" || fail "no '$want' in: $out"
}
refused "needs both --oauth-issuer" --http --oauth-issuer https://auth.example.com
refused "needs both --oauth-issuer" --http --oauth-resource https://mcp.example.com/mcp
refused "--oauth-issuer must be an https URL" --http --oauth-issuer http://auth.example.com \
    --oauth-resource https://mcp.example.com/mcp
refused "--oauth-resource must be this server's https URL" --http \
    --oauth-issuer https://auth.example.com --oauth-resource http://mcp.example.com/mcp
refused "must differ" --http --oauth-issuer https://auth.example.com \
    --oauth-resource https://mcp.example.com/mcp --oauth-scopes-read a --oauth-scopes-write a
refused "apply to serve --http" --oauth-issuer https://auth.example.com \
    --oauth-resource https://mcp.example.com/mcp
# Without keys or OAuth, a non-loopback address is refused; with OAuth (from the environment) it
# is served.
refused "without authentication" --http --listen 0.0.0.0:0
log=$(mktemp)
AGENCY_OAUTH_ISSUER=https://auth.example.com AGENCY_OAUTH_RESOURCE=https://mcp.example.com/mcp \
    "$bin" serve --http --listen 0.0.0.0:0 --state-db :memory: </dev/null 2>"$log" &
pid=$!
for _ in $(seq 100); do
    grep -q "MCP over Streamable HTTP at" "$log" && break
    sleep 0.1
done
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
grep -q "MCP over Streamable HTTP at http://0.0.0.0:" "$log" || { cat "$log"; rm -f "$log"; fail "did not serve with OAuth"; }
grep -q "OAuth: access tokens from https://auth.example.com" "$log" || { cat "$log"; rm -f "$log"; fail "no OAuth line"; }
rm -f "$log"
echo ok
