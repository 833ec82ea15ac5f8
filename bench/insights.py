#!/usr/bin/env python3
"""Insights (`make bench-insights`, issue 46): what the insight tools cost against the reads a
model made before them.

Two sample gateways (the built-in one): an agency of 40 clients (`--agency-clients 37`: the
sample's three and 37 tracked weekly, 50 keywords x 50 dates = 2,500 ranking rows each, with
`--keyword-url-switches`), and one whose client demo-bulk has 100,000 keyword rows
(`--bulk-keyword-rows 100000`: 500 keywords x 200 daily dates). One agency-mcp instance
(`serve --http`) on each; calls are 2026-07-28 `tools/call`s over Streamable HTTP, and "text" is
the text block a framework's model reads (content[0].text).

Measured:
- triage_clients over the 40 clients: wall time (median of --rounds), text bytes, gateway
  requests and rows read, and the instance's peak RSS (VmHWM) before and after.
- find_quick_wins on demo-bulk against a bare paging read of the same client's keyword rows
  straight from the gateway (every page of 1000, newest first), and against the pages the tool
  itself read.
- The everyday requests, before (the list and range tools a model used) and after (the
  insights): calls and text bytes.

Writes bench/results/insights.json and .md, and splices the latter into docs/benchmarks.md as
its "Insights" section. Standard library only.

  python3 bench/insights.py [--build-dir build] [--rounds 5] [--no-write]
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import ROOT, free_port, machine, splice  # noqa: E402

MODERN = "2026-07-28"
CLIENT = "agency-01"  # weekly: 50 keywords x 50 dates, as the gateway the issue measured


def log(msg):
    print(f"[bench-insights {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Mcp:
    """Modern, stateless tools/call over Streamable HTTP."""

    def __init__(self, port):
        self.port = port
        self.calls = 0
        self.text_bytes = 0

    def call(self, tool, args):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": tool, "arguments": args,
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                            "Accept": "application/json, text/event-stream",
                                            "MCP-Protocol-Version": MODERN,
                                            "Mcp-Method": "tools/call", "Mcp-Name": tool})
        raw = conn.getresponse().read().decode()
        conn.close()
        if raw.startswith("event:") or raw.startswith("data:") or "\ndata:" in raw:
            raw = [l[5:].strip() for l in raw.splitlines() if l.startswith("data:")][-1]
        reply = json.loads(raw)
        if "error" in reply:
            raise SystemExit(f"{tool}: {reply['error']}")
        result = reply["result"]
        text = result["content"][0]["text"] if result.get("content") else ""
        self.calls += 1
        self.text_bytes += len(text.encode())
        if result.get("isError"):
            raise SystemExit(f"{tool}: {text[:300]}")
        return result.get("structuredContent", {}), text

    def pages(self, tool, args):
        """Every page of a list tool (next_cursor), returns the rows."""
        rows, args = [], dict(args)
        while True:
            s, _ = self.call(tool, args)
            rows += s.get("rows", [])
            if not s.get("next_cursor"):
                return rows
            args["cursor"] = s["next_cursor"]


class Setup:
    def __init__(self, build, gateway_args, tmp, name):
        port = free_port()
        agency = os.path.join(build, "agency-mcp")
        self.gateway = subprocess.Popen(
            [agency, "--log-level", "warn", "sample-gateway", "--listen", f"127.0.0.1:{port}"] +
            gateway_args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.gateway_url = self.gateway.stdout.readline().strip()
        self.gateway_port = port
        self.port = free_port()
        env = dict(os.environ, AGENCY_GATEWAY_URL=self.gateway_url)
        env.pop("AGENCY_API_KEY", None)
        self.server = subprocess.Popen(
            [agency, "--log-level", "warn", "serve", "--http", "--listen",
             f"127.0.0.1:{self.port}", "--rate-limit", "off", "--state-db",
             os.path.join(tmp, name + ".db")], env=env, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                http.client.HTTPConnection("127.0.0.1", self.port, timeout=1).request("GET", "/healthz")
                break
            except OSError:
                time.sleep(0.05)

    def mcp(self):
        return Mcp(self.port)

    def stop(self):
        for p in (self.server, self.gateway):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def bare_read(port, client, pages=None):
    """Seconds to read a client's keyword rows straight from the gateway, pages of 1000 newest
    first (all of them, or the first `pages`)."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    offset, n = 0, 0
    while True:
        conn.request("GET", f"/api?resource=keywords&client_id={client}&limit=1000&offset={offset}"
                            "&order=tracked_at&direction=desc")
        page = json.loads(conn.getresponse().read())
        n += 1
        offset += len(page["data"])
        if not page["pagination"]["has_more"] or (pages and n >= pages):
            break
    conn.close()
    return time.perf_counter() - t0, offset


def timed(fn, rounds):
    times, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def measure_triage(setup, rounds):
    m = setup.mcp()
    rss0 = peak_rss_kib(setup.server.pid)
    seconds, (s, text) = timed(lambda: m.call("triage_clients", {}), rounds)
    return {"seconds": round(seconds, 3), "text_bytes": len(text.encode()),
            "structured_bytes": len(json.dumps(s, separators=(",", ":"))),
            "clients": s["triaged"], "partial": s.get("partial", False),
            "gateway_requests": s["provenance"]["gateway_requests"],
            "rows_read": s["provenance"]["rows_read"],
            "peak_rss_kib_before": rss0, "peak_rss_kib_after": peak_rss_kib(setup.server.pid)}


def measure_quick_wins(setup, rounds):
    m = setup.mcp()
    seconds, (s, text) = timed(lambda: m.call("find_quick_wins", {"client_id": "demo-bulk"}), rounds)
    pages = s["provenance"]["gateway_requests"]
    bare_all, rows_all = min(bare_read(setup.gateway_port, "demo-bulk") for _ in range(rounds))
    bare_same, rows_same = min(bare_read(setup.gateway_port, "demo-bulk", pages) for _ in range(rounds))
    return {"seconds": round(seconds, 3), "text_bytes": len(text.encode()),
            "rows_read": s["provenance"]["rows_read"], "gateway_requests": pages,
            "bare_read_all_seconds": round(bare_all, 3), "bare_read_all_rows": rows_all,
            "bare_read_same_pages_seconds": round(bare_same, 3),
            "ratio_to_bare_all": round(seconds / bare_all, 2),
            "ratio_to_same_pages": round(seconds / bare_same, 2)}


def everyday(setup):
    """(request, before: [(tool, args, paged)], after: [(tool, args)]) measured in calls and
    text bytes."""
    c = CLIENT
    probe = setup.mcp()
    s, _ = probe.call("latest_rankings", {"client_id": c, "limit": 1})
    newest = s.get("to_date") or s["rows"][0].get("tracked_at", s["rows"][0].get("created_at"))[:10]
    y, mo = int(newest[:4]), int(newest[5:7])
    last_month = f"{y if mo > 1 else y - 1:04d}-{(mo - 2) % 12 + 1:02d}"
    month_from, month_to = last_month + "-01", last_month + "-28"
    quarter_from = f"{y:04d}-{max(1, mo - 2):02d}-01"
    clients = [r["id"] for r in probe.pages("list_clients", {"limit": 100})]
    requests = [
        ("status of a client: rankings trend, latest audit, articles",
         [("get_client", {"client_id": c}, False),
          ("latest_rankings", {"client_id": c}, False),
          ("list_audits", {"client_id": c, "limit": 1}, False),
          ("list_articles", {"client_id": c}, False)],
         [("get_client_overview", {"client_id": c})]),
        ("keywords that dropped most last month, and those close to page 1 with volume",
         [("ranking_changes", {"client_id": c, "from": month_from, "to": month_to,
                               "direction": "dropped", "limit": 10}, False),
          ("latest_rankings", {"client_id": c, "limit": 500}, True)],
         [("ranking_changes", {"client_id": c, "from": month_from, "to": month_to,
                               "direction": "dropped", "limit": 10}),
          ("find_quick_wins", {"client_id": c})]),
        ("do we have cannibalization?",
         [("list_rankings", {"client_id": c, "from": quarter_from, "to": newest, "limit": 1000}, True)],
         [("find_cannibalization", {"client_id": c})]),
        ("which pages lost rankings this quarter?",
         [("list_rankings", {"client_id": c, "from": quarter_from, "to": newest, "limit": 1000}, True)],
         [("find_declining_pages", {"client_id": c, "weeks": 6})]),
        ("lost backlinks, strongest first",
         [("list_backlinks", {"client_id": c, "limit": 500}, True)],
         [("find_lost_backlinks", {"client_id": c})]),
        ("every backlink with domain authority over 50, strongest first",
         [("list_backlinks", {"client_id": c, "limit": 500}, True)],
         [("list_backlinks", {"client_id": c, "where": {"domain_authority": {"gt": 50}},
                              "order_by": "domain_authority",
                              "fields": ["source_url", "domain_authority", "anchor",
                                         "target_url", "status"]})]),
        ("which calls last month were A leads (demo-law: the agency clients have no calls)",
         [("list_calls", {"client_id": "demo-law", "from": month_from, "to": month_to,
                          "limit": 1000}, True),
          ("read_resource", {"resource": "call_scores", "client_id": "demo-law",
                             "limit": 1000}, True)],
         [("read_resource", {"resource": "call_scores", "client_id": "demo-law",
                             "where": {"lead_grade": "A",
                                       "created_at": {"gte": month_from, "lte": month_to}}})]),
        ("which clients need attention this week?",
         [(tool, dict(args, client_id=cl), paged) for cl in clients for tool, args, paged in [
             ("ranking_changes", {"from": month_to, "to": newest, "direction": "dropped", "limit": 10}, False),
             ("list_audits", {"limit": 2}, False),
             ("list_citations", {}, True),
             ("read_resource", {"resource": "reviews", "limit": 50}, False),
             ("list_backlinks", {"limit": 500}, True)]],
         [("triage_clients", {})]),
    ]
    out = []
    for name, before, after in requests:
        b, a = setup.mcp(), setup.mcp()
        for tool, args, paged in before:
            (b.pages if paged else b.call)(tool, args)
        for tool, args in after:
            a.call(tool, args)
        out.append({"request": name, "before_calls": b.calls, "before_text_bytes": b.text_bytes,
                    "after_calls": a.calls, "after_text_bytes": a.text_bytes})
        log(f"{name}: {b.calls} calls {b.text_bytes} B -> {a.calls} calls {a.text_bytes} B")
    return out


def markdown(res):
    m, t, q = res["machine"], res["triage"], res["quick_wins"]
    lines = ["## Insights", "",
             f"`python3 bench/insights.py` (issue 46) on {m['cpu']}, {m['cpus']} CPUs, "
             f"{m['date']}; load average {' '.join(m['loadavg'])} at the start. One agency-mcp "
             "instance over Streamable HTTP (2026-07-28) on the built-in sample gateway; text is "
             "what a framework's model reads (content[0].text).", "",
             "| measure | value | target |", "|---|---:|---|",
             f"| triage_clients, {t['clients']} clients (37 x 2,500 weekly keyword rows + the "
             f"sample's 3), median of {res['rounds']} | {t['seconds']} s | ≤ 5 s |",
             f"| its text | {t['text_bytes']:,} B | ≤ 6 KB |",
             f"| its gateway requests / rows read | {t['gateway_requests']} / {t['rows_read']:,} | |",
             f"| the instance's peak RSS before / after | {t['peak_rss_kib_before'] // 1024} / "
             f"{t['peak_rss_kib_after'] // 1024} MiB | bounded by a page per client in flight |",
             f"| find_quick_wins on 100,000 keyword rows (it stops after 5 tracking dates) | "
             f"{q['seconds']} s ({q['rows_read']:,} rows, {q['gateway_requests']} pages) | "
             f"≤ 1.2x a bare paging read |",
             f"| a bare paging read of those 100,000 rows from the gateway (this script: "
             f"http.client, json.loads per page) | "
             f"{q['bare_read_all_seconds']} s | ratio {q['ratio_to_bare_all']} |",
             f"| a bare read of the same {q['gateway_requests']} pages the tool read | "
             f"{q['bare_read_same_pages_seconds']} s | ratio {q['ratio_to_same_pages']} |",
             "", f"The everyday requests on client {CLIENT} (50 keywords x 50 weekly dates), "
             "before (the list and range tools, every page of a list read) and after (the "
             "insights):", "",
             "| request | calls before | text before | calls after | text after |",
             "|---|---:|---:|---:|---:|"]
    for r in res["everyday"]:
        lines.append(f"| {r['request']} | {r['before_calls']} | {r['before_text_bytes']:,} B | "
                     f"{r['after_calls']} | {r['after_text_bytes']:,} B |")
    lines += ["", "The backlinks and calls requests use the list filters (`where`, `order_by`; "
              "the backlinks one names the `fields` it shows)."]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    build = os.path.join(ROOT, args.build_dir)
    tmp = tempfile.mkdtemp(prefix="agency-bench-insights-")
    res = {"machine": machine(), "rounds": args.rounds}
    agency = Setup(build, ["--agency-clients", "37", "--keyword-url-switches"], tmp, "agency")
    try:
        res["triage"] = measure_triage(agency, args.rounds)
        log(f"triage: {res['triage']}")
        res["everyday"] = everyday(agency)
    finally:
        agency.stop()
    bulk = Setup(build, ["--bulk-keyword-rows", "100000"], tmp, "bulk")
    try:
        res["quick_wins"] = measure_quick_wins(bulk, args.rounds)
        log(f"quick wins: {res['quick_wins']}")
    finally:
        bulk.stop()
    md = markdown(res)
    print(md)
    if not args.no_write:
        out = os.path.join(ROOT, "bench", "results")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "insights.json"), "w") as f:
            json.dump(res, f, indent=2)
        with open(os.path.join(out, "insights.md"), "w") as f:
            f.write(md)
        splice(os.path.join(ROOT, "docs", "benchmarks.md"), md.rstrip("\n"), "Insights")


if __name__ == "__main__":
    main()
