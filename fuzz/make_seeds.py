#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (small, meaningful, valid inputs).
Inputs named regression-* are crashes the fuzzers found, kept so that CI replays them.

Run from anywhere: python3 fuzz/make_seeds.py. The files are committed; this script is how
they were made, and how to make them again after a protocol change."""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}
TASKS_EXT = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
             "io.modelcontextprotocol/clientCapabilities": {
                 "extensions": {"io.modelcontextprotocol/tasks": {}}}}
C = "demo-plumbing"


def msg(id_, method, params=None):
    m = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        m["id"] = id_
    if params is not None:
        m["params"] = params
    return json.dumps(m, separators=(",", ":"))


def modern(id_, method, params=None):
    p = dict(params or {})
    p["_meta"] = MODERN
    return msg(id_, method, p)


# Each tool's valid arguments: the examples of its input schema (schemas/<tool>.input.json),
# the one definition the tests and docs/tools.md read too.
SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "schemas"
TOOL_ARGS = {path.name[:-len(".input.json")]: json.loads(path.read_text())["examples"][0]
             for path in sorted(SCHEMAS.glob("*.input.json"))}
# Arguments the examples leave out, each a seed of its own.
TOOL_VARIANTS = {
    "read_resource-order-filter": ("read_resource", {
        "client_id": C, "resource": "keywords", "order": "id", "direction": "asc",
        "filter_field": "status", "filter_value": "active", "limit": 4}),
    "refresh_backlinks-idempotency-key": ("refresh_backlinks", {"client_id": C, "idempotency_key": "k-1"}),
    "run_local_grid_scan-lat-lng": ("run_local_grid_scan", {
        "client_id": C, "keyword": "plumber", "lat": 42.0, "lng": -87.7}),
    "send_prospect_email-confirmation": ("send_prospect_email", {
        "client_id": C, "email_id": "em-1", "confirmation_id": "abc"}),
}


def write(target, name, data):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def stdio():
    init = msg(1, "initialize", {"protocolVersion": "2025-11-25",
                                 "capabilities": {"elicitation": {}, "tasks": {}},
                                 "clientInfo": {"name": "seed", "version": "1"}})
    inited = msg(None, "notifications/initialized")
    write("stdio_dispatch", "legacy-session", "\n".join([
        init, inited, msg(2, "tools/list"), msg(3, "ping"), msg(4, "resources/list"),
        msg(5, "prompts/list"), msg(6, "logging/setLevel", {"level": "debug"}),
        msg(7, "tools/call", {"name": "list_clients", "arguments": {}})]) + "\n")
    write("stdio_dispatch", "legacy-task", "\n".join([
        init, inited,
        msg(2, "tools/call", {"name": "run_seo_audit", "arguments": TOOL_ARGS["run_seo_audit"],
                              "task": {"ttl": 60000}}),
        msg(3, "tasks/list"), msg(4, "tasks/get", {"taskId": "x"}),
        msg(5, "tasks/cancel", {"taskId": "x"})]) + "\n")
    write("stdio_dispatch", "legacy-elicitation", "\n".join([
        init, inited,
        msg(2, "tools/call", {"name": "deploy_article", "arguments": TOOL_ARGS["deploy_article"]}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"action": "accept",
                                                          "content": {"confirm": True}}}),
        msg(None, "notifications/cancelled", {"requestId": 2})]) + "\n")
    write("stdio_dispatch", "modern-calls", "\n".join([
        modern(1, "server/discover"), modern(2, "tools/list"),
        modern(3, "tools/call", {"name": "list_keywords", "arguments": TOOL_ARGS["list_keywords"]}),
        modern(4, "resources/templates/list"),
        modern(5, "completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                          "argument": {"name": "client_id", "value": "demo"}}),
        modern(6, "tools/call", {"name": "deploy_article", "arguments": TOOL_ARGS["deploy_article"],
                                 "inputResponses": {}})]) + "\n")
    write("stdio_dispatch", "modern-task-extension", msg(1, "tools/call", {
        "name": "run_seo_audit", "arguments": TOOL_ARGS["run_seo_audit"], "_meta": TASKS_EXT}) +
        "\n" + msg(2, "tasks/get", {"taskId": "x", "_meta": TASKS_EXT}) + "\n")
    write("stdio_dispatch", "garbage-lines", "not json\n\n   \n{\"jsonrpc\":\"2.0\"}\n" +
          msg(9, "unknown/method") + "\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"")


def http():
    def req(method, body=None, headers=()):
        h = [f"{method} /mcp HTTP/1.1", "Host: 127.0.0.1", "Accept: application/json, text/event-stream"]
        h += list(headers)
        if body and "MCP-Protocol-Version: 2026-07-28" in headers:
            m = json.loads(body)
            m = m if isinstance(m, dict) and "method" in m else {"method": ""}
            h.append("Mcp-Method: " + m["method"])
            if m["method"] == "tools/call":
                h.append("Mcp-Name: " + m["params"]["name"])
        if body is not None:
            h += ["Content-Type: application/json", f"Content-Length: {len(body.encode())}"]
        return "\r\n".join(h) + "\r\n\r\n" + (body or "")
    init = msg(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "seed", "version": "1"}})
    write("http_request", "legacy-initialize", req("POST", init))
    write("http_request", "modern-discover", req("POST", modern(1, "server/discover"),
                                                 ["MCP-Protocol-Version: 2026-07-28"]))
    write("http_request", "modern-tool-call", req(
        "POST", modern(2, "tools/call", {"name": "list_rankings", "arguments": TOOL_ARGS["list_rankings"]}),
        ["MCP-Protocol-Version: 2026-07-28"]))
    write("http_request", "modern-interactive", req(
        "POST", modern(3, "tools/call", {"name": "deploy_article", "arguments": TOOL_ARGS["deploy_article"]}),
        ["MCP-Protocol-Version: 2026-07-28", "Origin: http://127.0.0.1"]))
    write("http_request", "legacy-session-call", req(
        "POST", msg(4, "tools/list"), ["Mcp-Session-Id: 0123456789abcdef", "MCP-Protocol-Version: 2025-06-18"]))
    write("http_request", "delete-session", req("DELETE", None, ["Mcp-Session-Id: 0123456789abcdef"]))
    write("http_request", "get-and-options", req("GET") + req("OPTIONS", None, ["Origin: http://localhost:3000"]))
    body = modern(5, "ping")
    chunked = ("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: ping\r\nTransfer-Encoding: chunked\r\n\r\n"
               f"{len(body):x}\r\n{body}\r\n0\r\n\r\n")
    write("http_request", "chunked", chunked)
    write("http_request", "pipelined", req("POST", modern(6, "tools/list"), ["MCP-Protocol-Version: 2026-07-28"]) +
          req("POST", "[1,2]", ["MCP-Protocol-Version: 2026-07-28"]))
    write("http_request", "wrong-path", "GET /elsewhere?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")


def tool_call():
    for name, args in TOOL_ARGS.items():
        write("tool_call", name, name + "\n" + json.dumps(args))
    for seed, (name, args) in TOOL_VARIANTS.items():
        write("tool_call", seed, name + "\n" + json.dumps(args))
    write("tool_call", "unknown-tool", "no_such_tool\n{}")
    write("tool_call", "list_keywords-bad-type", "list_keywords\n{\"client_id\":5,\"limit\":\"x\"}")
    # where / order_by (issue 46): pushed down, applied by the server, ranked, refused.
    write("tool_call", "list_backlinks-where-order", "list_backlinks\n" + json.dumps(
        {"client_id": C, "where": {"domain_authority": {"gt": 50}, "source_type": "forum",
                                   "anchor": {"contains": "law"}, "status": {"in": ["active", 1, True]}},
         "order_by": "domain_authority", "direction": "asc", "limit": 3}))
    write("tool_call", "list_calls-where-range", "list_calls\n" + json.dumps(
        {"client_id": C, "from": "2026-01-01", "where": {"created_at": {"lte": "2026-06-30"},
                                                          "duration_seconds": {"ne": 0}},
         "order_by": "duration_seconds"}))


def sealed():
    write("sealed_tokens", "cursor-raw", b"\x00" + b"eyJ0IjoibGlzdF9rZXl3b3JkcyJ9.AAAA")
    write("sealed_tokens", "cursor-tool", b"\x01" + b"eyJ0IjoibGlzdF9rZXl3b3JkcyJ9.bWFj")
    write("sealed_tokens", "cursor-payload", b"\x02" + json.dumps(
        {"t": "list_keywords", "c": C, "p": "0000000000000000", "f": "0000000000000000",
         "o": 5, "e": 9999999999, "x": {"k": 1}}).encode())
    write("sealed_tokens", "state-raw", b"\x03" + b"eyJ0IjoidG9vbDpkZXBsb3lfYXJ0aWNsZSJ9.c2ln")
    write("sealed_tokens", "state-payload", b"\x04" + json.dumps(
        {"t": "tool:deploy_article", "a": "00", "p": "00", "e": 9999999999999, "n": "nonce",
         "k": ["confirm"], "r": {"confirm": {"action": "accept"}}}).encode())
    write("sealed_tokens", "confirmation-store", b"\x05" + b"c0ffee0123456789")
    write("sealed_tokens", "confirmation-tool", b"\x06" + b"c0ffee0123456789")
    write("sealed_tokens", "list-cursors", b"\x07" + b"dGFza3M6NTA")  # base64url("tasks:50")


def page_walk():
    pages = {
        "plain": '{"data":[{"id":"a","keyword":"Evanston plumber","n":1},{"id":"b","keyword":"x\\"y"}],'
                 '"pagination":{"total":2,"limit":100,"offset":0,"has_more":false}}',
        "pagination-first": '{"pagination":{"total":1e3,"has_more":true},"resource":"keywords",'
                            '"data":[ {"id":"k1","n":[1,{"a":"]"}]} , {"data":{"nested":"}"}} ]}',
        "bad-row": '{"data":[{"id":1},2]}',
        "no-data": '{"rows":[]}',
        "escaped-key": '{"d\\u0061ta":[{"id":"zz"}],"data":[{"id":"zz","keyword":"\\u00e9vanston"}]}',
        "deep": '{"data":[{"id":' + "[" * 70 + "]" * 70 + '},{"id":"evanston"}]}',
    }
    for i, (name, page) in enumerate(pages.items()):
        write("page_walk", name, bytes([i % 8]) + b"evanston\n" + page.encode())
    write("page_walk", "no-needle", b"\x05\n" + pages["plain"].encode())


def sample_query():
    gets = {
        "read-keywords": "resource=keywords&client_id=demo-plumbing&limit=5&offset=2&order=id&direction=asc",
        "read-clients": "resource=clients",
        "read-filter": "resource=articles&client_id=demo-dental&filter_field=status&filter_value=draft",
        "read-bad": "resource=keywords&client_id=demo-plumbing&limit=0&order=nope",
        "read-encoded": "resource=rankings&client_id=demo%2Dplumbing&filter_field=id&filter_value=%E2%9C%93",
    }
    for name, q in gets.items():
        write("sample_query", name, b"\x00" + q.encode())
    write("sample_query", "discovery", b"\x00")
    write("sample_query", "action-audit", b"\x02" + json.dumps(
        {"action": "seo_audit", "client_id": C, "url": "https://example.com/"}).encode())
    write("sample_query", "action-article", b"\x02" + json.dumps(
        {"action": "generate_blog", "client_id": C, "keyword": "plumber"}).encode())
    write("sample_query", "action-bad", b"\x02" + b'{"action":5}')
    write("sample_query", "method-put", b"\x03PUT")


if __name__ == "__main__":
    # The seeds made here are written anew; nothing is deleted: regression-* inputs, the other
    # targets' corpora (compact_text, keys_import, oauth_token, ... made by hand or kept from
    # their fuzzers) and the hand-made seeds beside these stay. Remove a renamed seed by hand.
    stdio(); http(); tool_call(); sealed(); page_walk(); sample_query()
    for d in sorted(ROOT.iterdir()):
        print(d.name, len(list(d.iterdir())))
