#!/usr/bin/env bash
# The MCP bundle (issue 48): OUT_DIR/agency-mcp-VERSION-linux-x86_64.mcpb, for a desktop host
# that installs bundles (Claude Desktop): the release archive (scripts/make-dist.sh) as
# server/, and a manifest.json whose user_config asks for the gateway URL and a sensitive API
# key (both optional: left empty, the host passes the literal `${user_config.x}`, which the
# server reads as unset) and whose tools are the server's own tools/list. Validated and packed
# by @anthropic-ai/mcpb, pinned in tests/clients/package-lock.json (scripts/npm-deps.sh).
# Usage: make-mcpb.sh BUILD_DIR [OUT_DIR] (default OUT_DIR: dist).
set -euo pipefail
build=$(cd "$1" && pwd)
out=${2:-dist}
src=$(cd "$(dirname "$0")/.." && pwd)
mcpb=$src/tests/clients/node_modules/.bin/mcpb
[ -x "$mcpb" ] || { echo "make-mcpb.sh: no $mcpb: run scripts/npm-deps.sh" >&2; exit 1; }
export PATH=$src/tests/clients/node_modules/.bin:$PATH  # the pinned Node.js
version=$("$build/agency-mcp" --version | awk '{print $NF}')
name=agency-mcp-$version-linux-x86_64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$src/scripts/make-dist.sh" "$build" "$work" >/dev/null
mkdir -p "$work/bundle"
tar -C "$work" -xzf "$work/$name.tar.gz"
mv "$work/$name" "$work/bundle/server"
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"make-mcpb","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
  env -u AGENCY_GATEWAY_URL -u AGENCY_API_KEY "$build/agency-mcp" serve --state-db :memory: \
    2>/dev/null >"$work/tools.jsonl"
python3 - "$work/tools.jsonl" "$src/server.json" "$version" "$work/bundle/manifest.json" <<'PY'
import json, sys
tools_file, server_file, version, out = sys.argv[1:]
replies = {m["id"]: m for m in map(json.loads, open(tools_file)) if "id" in m}
tools = [{"name": t["name"], "description": t["description"]} for t in replies[2]["result"]["tools"]]
server = json.load(open(server_file))
manifest = {
    "manifest_version": "0.3",
    "name": "agency-mcp",
    "display_name": server["title"],
    "version": version,
    "description": server["description"],
    "author": {"name": "agency-mcp"},
    "repository": {"type": "git", "url": server["repository"]["url"]},
    "server": {
        "type": "binary",
        "entry_point": "server/bin/agency-mcp",
        "mcp_config": {
            "command": "${__dirname}/server/bin/agency-mcp",
            "args": ["serve"],
            "env": {
                "AGENCY_GATEWAY_URL": "${user_config.gateway_url}",
                "AGENCY_API_KEY": "${user_config.api_key}",
            },
        },
    },
    "tools": tools,
    "compatibility": {"platforms": ["linux"]},
    "user_config": {
        "gateway_url": {
            "type": "string", "title": "Gateway URL", "required": False,
            "description": "The agency gateway's base URL, e.g. https://gateway.example.com/api. "
                           "Empty: the built-in sample data.",
        },
        "api_key": {
            "type": "string", "title": "Gateway API key", "required": False, "sensitive": True,
            "description": "The gateway's API key (kept by the host, never logged by the server).",
        },
    },
}
json.dump(manifest, open(out, "w"), indent=2)
PY
mcpb validate "$work/bundle/manifest.json"
mkdir -p "$out"
mcpb pack "$work/bundle" "$out/$name.mcpb" >/dev/null
(cd "$out" && sha256sum "$name.mcpb" >"$name.mcpb.sha256")
echo "$out/$name.mcpb ($(du -h "$out/$name.mcpb" | cut -f1))"
