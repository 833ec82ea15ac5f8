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
# Issue 35: the client claims' options.
oauth=(--http --oauth-issuer https://auth.example.com --oauth-resource https://mcp.example.com/mcp)
groups=$(mktemp)
echo '{"writers": "demo-law"}' >"$groups"
refused "--oauth-client-groups $groups: group \"writers\": want a list of client ids" \
    "${oauth[@]}" --oauth-client-groups "$groups"
echo '{}' >"$groups"
refused "the file maps no group" "${oauth[@]}" --oauth-client-groups "$groups"
refused "--oauth-client-groups: cannot read /nonexistent/groups.json" "${oauth[@]}" \
    --oauth-client-groups /nonexistent/groups.json
refused "--oauth-unclaimed-clients all needs --oauth-clients-claim" "${oauth[@]}" \
    --oauth-unclaimed-clients all
refused "--oauth-unclaimed-clients" "${oauth[@]}" --oauth-clients-claim clients \
    --oauth-unclaimed-clients some
refused "--oauth-clients-claim: a claim's name" "${oauth[@]}" --oauth-clients-claim $'cl\x01ients'
rm -f "$groups"
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
# With a clients claim and a group file, from the environment, the server says what it reads.
groups=$(mktemp)
echo '{"writers-law": ["demo-law"], "admins": "*"}' >"$groups"
AGENCY_OAUTH_ISSUER=https://auth.example.com AGENCY_OAUTH_RESOURCE=https://mcp.example.com/mcp \
    AGENCY_OAUTH_CLIENTS_CLAIM=clients AGENCY_OAUTH_CLIENT_GROUPS="$groups" \
    "$bin" serve --http --listen 127.0.0.1:0 --state-db :memory: </dev/null 2>"$log" &
pid=$!
for _ in $(seq 100); do
    grep -q "MCP over Streamable HTTP at" "$log" && break
    sleep 0.1
done
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
grep -q "reaches the clients its token names (claim clients, groups of claim groups mapped in $groups); a token naming none reaches none (refused)" "$log" \
    || { cat "$log"; rm -f "$log" "$groups"; fail "no client claims line"; }
rm -f "$log" "$groups"
echo ok
