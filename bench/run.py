#!/usr/bin/env python3
"""The benchmark (`make bench`): agency-mcp beside the TypeScript-SDK peer and the bare gateway.

Starts one sample gateway (its own process, with a 100,000-row client), then runs every scenario
with bench's load driver (build-release/agency_bench_driver) against agency-mcp, the peer
(bench/peer, node) and the gateway directly; writes bench/results/results.json and regenerates
docs/benchmarks.md and docs/benchmarks.png. Standard library only.

  python3 bench/run.py [--build-dir build-release] [--quick]
"""
import argparse
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BULK_ROWS = 100_000
KEYWORD = "hvac repair evanston"  # one of demo-bulk's 500 keywords (200 rows of it)


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, args):
        self.args = args
        self.build = os.path.join(ROOT, args.build_dir)
        self.agency = os.path.join(self.build, "agency-mcp")
        self.driver = os.path.join(self.build, "agency_bench_driver")
        self.peer = os.path.join(ROOT, "bench", "peer", "server.mjs")
        self.out = os.path.join(ROOT, "bench", "results")
        os.makedirs(self.out, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="agency-bench-")
        self.results = {"runs": [], "cold_start": {}, "memory": {}, "callgrind": {},
                        "tools_list_bytes": {}}
        self.scale = 0.25 if args.quick else 1.0

    # --- processes -------------------------------------------------------------------------------

    def start_gateway(self):
        port = free_port()
        self.gateway = subprocess.Popen(
            [self.agency, "--log-level", "warn", "sample-gateway", "--listen", f"127.0.0.1:{port}",
             "--bulk-keyword-rows", str(BULK_ROWS)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.gateway_url = self.gateway.stdout.readline().strip()
        if not self.gateway_url.startswith("http://127.0.0.1"):
            raise SystemExit("the sample gateway did not start")
        self.gateway_port = port
        log(f"sample gateway at {self.gateway_url} ({BULK_ROWS} rows for demo-bulk)")

    def stop_gateway(self):
        self.gateway.terminate()
        try:
            self.gateway.wait(10)
        except subprocess.TimeoutExpired:
            self.gateway.kill()

    def env(self):
        env = dict(os.environ)
        env["AGENCY_GATEWAY_URL"] = self.gateway_url
        env.pop("AGENCY_API_KEY", None)
        env["AGENCY_STATE_DB"] = os.path.join(self.tmp, "state.db")
        env["NODE_ENV"] = "production"
        return env

    def server(self, impl, transport):
        """The command that starts one server ({port} is filled by the driver)."""
        if impl == "agency":
            cmd = [self.agency, "--log-level", "warn", "serve", "--rate-limit", "off", "--state-db",
                   os.path.join(self.tmp, "state.db"),
                   # generate_article at 16 in flight: the per-client credit limiter (2 in flight,
                   # 20 a minute by default) would refuse most calls; the peer has none.
                   "--max-actions-in-flight-per-client", "64",
                   "--max-actions-per-minute-per-client", "1000000"]
            if transport in ("http", "modern"):
                cmd += ["--http", "--listen", "127.0.0.1:{port}"]
            return cmd
        cmd = ["node", self.peer]
        if transport == "http":
            cmd += ["--http", "--port", "{port}"]
        return cmd

    def drive(self, argv, timeout=600):
        proc = subprocess.run([self.driver] + argv, capture_output=True, text=True,
                              env=self.env(), timeout=timeout)
        try:
            out = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            out = {"failed": -1, "ok": 0, "first_failure": proc.stderr[-500:]}
        if proc.returncode != 0:
            log(f"  FAILED: {out.get('first_failure', '')[:300]}")
        return out

    # --- scenarios -------------------------------------------------------------------------------

    SCENARIOS = {
        # name: tool, arguments, gateway path (direct baseline), scan, requests per c (agency, peer)
        "list_keywords": {
            "tool": "list_keywords",
            "args": {"client_id": "demo-bulk", "limit": 100},
            "path": "/api?resource=keywords&client_id=demo-bulk&limit=100&offset=0"
                    "&order=tracked_at&direction=desc",
            "scan": False,
            "modern": True,
            "n": {1: (4000, 1500), 16: (20000, 3000)},
        },
        "list_rankings": {
            "tool": "list_rankings",
            "args": {"client_id": "demo-bulk", "keyword": KEYWORD, "limit": 1000},
            "path": "/api?resource=keywords&client_id=demo-bulk&limit=1000"
                    "&order=tracked_at&direction=desc",
            "scan": True,
            "n": {1: (30, 4), 16: (96, 16)},
        },
        # The aggregate over one month of demo-bulk's history (500 keywords, 31 tracking dates:
        # 16 gateway pages of 1000 rows); the direct baseline reads those same 16 pages. The
        # peer has no such tool (an assistant would page list_rankings and group the rows).
        "ranking_changes": {
            "tool": "ranking_changes",
            "args": {"client_id": "demo-bulk", "from": "2026-10-14", "to": "2026-11-14",
                     "direction": "dropped", "limit": 25},
            "path": "/api?resource=keywords&client_id=demo-bulk&limit=1000"
                    "&order=tracked_at&direction=desc",
            "scan": True,
            "scan_pages": 16,
            "peer": False,
            "n": {1: (30, 0), 16: (96, 0)},
        },
        "generate_article": {
            "tool": "generate_article",
            "args": {"client_id": "demo-dental", "keyword": "bench keyword {i}"},
            "path": None,
            "scan": False,
            "n": {1: (1000, 500), 16: (3000, 1000)},
        },
    }

    def count(self, n):
        return max(4, int(n * self.scale))

    def run_scenarios(self, only=None):
        """Each configuration --repeat times, the implementations interleaved within a round so
        that a burst of load elsewhere on the machine hits them alike; the run with the median
        calls/s of each configuration is the one reported (all runs are kept in results.json)."""
        all_runs = {}
        for rnd in range(self.args.repeat):
            for name, sc in self.SCENARIOS.items():
                if only is not None and name not in only:
                    continue
                for c in (1, 16):
                    n_agency, n_peer = sc["n"][c]
                    # 2026-07-28 requests over HTTP (the driver's `modern` transport), for the
                    # text those clients get: the compact rendering (agency-mcp only).
                    for transport in ("stdio", "http") + (("modern",) if sc.get("modern") else ()):
                        impls = [("agency", n_agency)]
                        if sc.get("peer", True) and transport != "modern":
                            impls.append(("peer", n_peer))
                        for impl, n in impls:
                            n = self.count(n)
                            log(f"[round {rnd + 1}/{self.args.repeat}] {name} c={c} {transport} {impl} n={n}")
                            argv = ["--transport", transport, "-n", str(n), "-c", str(c),
                                    "--warmup", str(min(200, max(c, n // 10))),
                                    "--tool", sc["tool"], "--args", json.dumps(sc["args"]),
                                    "--max-seconds", "240"]
                            if transport in ("http", "modern"):
                                argv += ["--url", "http://127.0.0.1:{port}/mcp"]
                            argv += ["--"] + self.server(impl, transport)
                            r = self.drive(argv)
                            r.update(scenario=name, impl=impl, transport=transport, c=c, round=rnd)
                            all_runs.setdefault((name, impl, transport, c), []).append(r)
                            self.show(r)
                    if sc["path"]:
                        n = self.count(n_agency)
                        log(f"[round {rnd + 1}/{self.args.repeat}] {name} c={c} direct gateway n={n}")
                        argv = ["--transport", "gateway", "--url", self.gateway_url, "--path",
                                sc["path"], "-n", str(n), "-c", str(c),
                                "--warmup", str(min(200, max(c, n // 10))),
                                "--pid", str(self.gateway.pid), "--max-seconds", "240"]
                        if sc["scan"]:
                            argv.append("--scan")
                        if sc.get("scan_pages"):
                            argv += ["--scan-pages", str(sc["scan_pages"])]
                        r = self.drive(argv)
                        r.update(scenario=name, impl="direct", transport="http", c=c, round=rnd)
                        all_runs.setdefault((name, "direct", "http", c), []).append(r)
                        self.show(r)
        for runs in all_runs.values():
            ranked = sorted(runs, key=lambda r: r.get("calls_per_s", 0))
            median = dict(ranked[len(ranked) // 2])
            median["rounds"] = [{k: r.get(k) for k in ("calls_per_s", "p50_ms", "p99_ms",
                                                       "server_cpu_per_call_ms", "failed")}
                                for r in runs]
            self.results["runs"].append(median)

    @staticmethod
    def show(r):
        log(f"  {r.get('calls_per_s', 0):10.1f} calls/s  p50 {r.get('p50_ms', 0):8.3f} ms  "
            f"p99 {r.get('p99_ms', 0):8.3f} ms  server cpu/call {r.get('server_cpu_per_call_ms', 0):.4f} ms"
            f"  driver cpu/call {r.get('driver_cpu_per_call_ms', 0):.4f} ms  "
            f"hwm {r.get('server_hwm_kib', 0) / 1024:.1f} MiB  ok {r.get('ok')} failed {r.get('failed')}")

    def cold_start(self):
        reps = 7 if self.args.quick else 21
        args = json.dumps({"client_id": "demo-plumbing", "limit": 100})
        for impl in ("agency", "peer"):
            samples = {"stdio": ([], []), "http": ([], [])}
            # The transports alternate, so a slow spell on the machine hits both alike.
            for _ in range(reps):
                for transport in ("stdio", "http"):
                    times, rss = samples[transport]
                    argv = ["--transport", transport, "--cold-start", "-n", "1", "--tool",
                            "list_keywords", "--args", args, "--max-seconds", "30"]
                    if transport == "http":
                        argv += ["--url", "http://127.0.0.1:{port}/mcp"]
                    r = self.drive(argv + ["--"] + self.server(impl, transport))
                    if r.get("ok") == 1:
                        times.append(r["cold_start_ms"])
                        rss.append(r["idle_rss_kib"])
            for transport, (times, rss) in samples.items():
                key = f"{impl}/{transport}"
                self.results["cold_start"][key] = {
                    "median_ms": statistics.median(times) if times else None,
                    "min_ms": min(times) if times else None,
                    "reps": len(times),
                    "rss_after_first_call_kib": statistics.median(rss) if rss else None}
                log(f"cold start {key}: {self.results['cold_start'][key]}")

    def cold_start_out_of_the_box(self):
        """Spawn to the `initialize` answer as a new user starts it: stdio, no gateway configured
        (the built-in sample gateway), a fresh state directory each time."""
        reps = 7 if self.args.quick else 21
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "1"}}}) + "\n"
        times = []
        for i in range(reps):
            home = tempfile.mkdtemp(dir=self.tmp)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("AGENCY_GATEWAY_URL", "AGENCY_API_KEY", "AGENCY_STATE_DB")}
            env["HOME"] = home
            started = time.perf_counter()
            proc = subprocess.Popen([self.agency, "--log-level", "warn", "serve"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env)
            proc.stdin.write(init.encode())
            proc.stdin.flush()
            line = proc.stdout.readline()
            elapsed = (time.perf_counter() - started) * 1000
            proc.stdin.close()
            proc.wait(30)
            if b'"result"' in line:
                times.append(elapsed)
        self.results["cold_start"]["agency/initialize_sample_fresh"] = {
            "median_ms": statistics.median(times) if times else None,
            "min_ms": min(times) if times else None, "reps": len(times)}
        log(f"spawn to initialize, sample gateway, fresh state: "
            f"{self.results['cold_start']['agency/initialize_sample_fresh']}")

    # Calls whose answers an assistant reads: the structured answer's size and what the text
    # block beside it adds, in each era (legacy: initialize first; modern: _meta per request).
    ANSWERS = [
        ("list_keywords, no limit (the default page)", "list_keywords", {"client_id": "demo-bulk"}),
        ("list_keywords, limit 100", "list_keywords", {"client_id": "demo-bulk", "limit": 100}),
        ("list_keywords, limit 1000", "list_keywords", {"client_id": "demo-bulk", "limit": 1000}),
        ("list_keywords, limit 100, fields keyword+position", "list_keywords",
         {"client_id": "demo-bulk", "limit": 100, "fields": ["keyword", "position"]}),
        ("list_rankings, one keyword, limit 1000", "list_rankings",
         {"client_id": "demo-bulk", "keyword": KEYWORD, "limit": 1000}),
        ("ranking_changes, one month, dropped, top 25", "ranking_changes",
         {"client_id": "demo-bulk", "from": "2026-10-14", "to": "2026-11-14",
          "direction": "dropped", "limit": 25}),
        ("latest_rankings, limit 100", "latest_rankings", {"client_id": "demo-bulk", "limit": 100}),
    ]

    def answer_sizes(self):
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        out = []
        for era in ("legacy", "modern"):
            msgs = []
            if era == "legacy":
                msgs.append({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}})
                msgs.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
            for i, (_, tool, args) in enumerate(self.ANSWERS):
                params = {"name": tool, "arguments": args}
                if era == "modern":
                    params["_meta"] = meta
                msgs.append({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                             "params": params})
            proc = subprocess.run(self.server("agency", "stdio"), env=self.env(), text=True,
                                  input="".join(json.dumps(m) + "\n" for m in msgs),
                                  capture_output=True, timeout=300)
            for line in proc.stdout.splitlines():
                m = json.loads(line)
                if not m.get("id"):
                    continue
                res = m.get("result", {})
                sc = res.get("structuredContent")
                text = "".join(c.get("text", "") for c in res.get("content", []))
                out.append({"era": era, "label": self.ANSWERS[m["id"] - 1][0],
                            "structured_bytes": len(json.dumps(sc, separators=(",", ":")))
                            if sc is not None else 0,
                            "text_bytes": len(text), "message_bytes": len(line),
                            "rows": (sc or {}).get("returned"),
                            "truncated": (sc or {}).get("truncated")})
        self.results["answer_sizes"] = out
        log(f"answer sizes: {len(out)} answers measured")

    def tools_list(self):
        for impl in ("agency", "peer"):
            r = self.drive(["--transport", "stdio", "--tools-list", "-n", "1", "--tool",
                            "list_keywords", "--args",
                            json.dumps({"client_id": "demo-plumbing", "limit": 1}),
                            "--"] + self.server(impl, "stdio"))
            self.results["tools_list_bytes"][impl] = r.get("tools_list_bytes")
        log(f"tools/list bytes: {self.results['tools_list_bytes']}")

    def growth(self):
        """200,000 list_keywords calls at 16 in flight over HTTP; VmRSS along the way."""
        n = self.count(200_000)
        log(f"memory growth: agency http c=16 n={n}")
        r = self.drive(["--transport", "http", "--url", "http://127.0.0.1:{port}/mcp",
                        "-n", str(n), "-c", "16", "--warmup", "1000", "--rss-every",
                        str(n // 10), "--tool", "list_keywords", "--args",
                        json.dumps({"client_id": "demo-bulk", "limit": 100}),
                        "--max-seconds", "300", "--"] + self.server("agency", "http"),
                       timeout=400)
        self.show(r)
        self.results["memory"]["growth"] = r

    def callgrind(self):
        """Instructions per call, by difference of two runs (start-up cancels out)."""
        if not shutil.which("valgrind"):
            log("valgrind missing: no instruction counts")
            return
        plans = {
            "list_keywords": ({"client_id": "demo-bulk", "limit": 100}, 50, 550),
            "list_rankings": ({"client_id": "demo-bulk", "keyword": KEYWORD, "limit": 1000}, 1, 4),
        }
        for name, (args, n1, n2) in plans.items():
            totals = {}
            for n in (n1, n2):
                out = os.path.join(self.tmp, f"callgrind.{name}.{n}")
                cmd = ["valgrind", "--tool=callgrind", "--dump-instr=no",
                       f"--callgrind-out-file={out}"] + self.server("agency", "stdio")
                r = self.drive(["--transport", "stdio", "-n", str(n), "-c", "1", "--tool", name,
                                "--args", json.dumps(args), "--max-seconds", "500",
                                "--stop-grace", "120", "--"] + cmd, timeout=700)
                totals[n] = self.callgrind_total(out) if r.get("ok") == n else None
                if n == n2 and totals[n] is not None:
                    self.annotate(out, name)
            if totals[n1] is not None and totals[n2] is not None:
                per_call = (totals[n2] - totals[n1]) / (n2 - n1)
                self.results["callgrind"][name] = {"instructions_per_call": round(per_call),
                                                   "runs": {str(k): v for k, v in totals.items()}}
                log(f"callgrind {name}: {per_call:,.0f} instructions per call")

    def callgrind_cold(self):
        """Instructions of a whole stdio process: exec, start-up, the first list_keywords, exit."""
        out = os.path.join(self.tmp, "callgrind.cold")
        cmd = ["valgrind", "--tool=callgrind", "--dump-instr=no",
               f"--callgrind-out-file={out}"] + self.server("agency", "stdio")
        r = self.drive(["--transport", "stdio", "--cold-start", "-n", "1", "--tool", "list_keywords",
                        "--args", json.dumps({"client_id": "demo-plumbing", "limit": 100}),
                        "--max-seconds", "120", "--stop-grace", "60", "--"] + cmd, timeout=300)
        if r.get("ok") == 1:
            total = self.callgrind_total(out)
            self.results["callgrind"]["cold_start"] = {"instructions_per_call": total,
                                                       "runs": {"1": total}}
            self.annotate(out, "cold_start")
            log(f"callgrind cold start: {total:,} instructions")

    @staticmethod
    def callgrind_total(path):
        total = None
        with open(path) as f:
            for line in f:
                if line.startswith("totals:") or line.startswith("summary:"):
                    total = int(line.split()[1])
        return total

    def annotate(self, path, name):
        if not shutil.which("callgrind_annotate"):
            return
        proc = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=95", path],
                              capture_output=True, text=True)
        lines = [l for l in proc.stdout.splitlines() if re.match(r"^\s*[\d,]+ \(", l)]
        with open(os.path.join(self.out, f"callgrind-{name}.txt"), "w") as f:
            f.write("\n".join(lines[:40]) + "\n")

    # --- reporting -------------------------------------------------------------------------------

    def machine(self):
        model = "unknown"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        mem = ""
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":", 1)[1].strip()
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
                "memory": mem, "node": node, "compiler": gxx,
                "loadavg_start": open("/proc/loadavg").read().split()[:3],
                "date": time.strftime("%Y-%m-%d %H:%M %Z")}

    def find(self, scenario, impl, transport, c):
        for r in self.results["runs"]:
            if (r["scenario"], r["impl"], r["transport"], r["c"]) == (scenario, impl, transport, c):
                return r
        return None

    def write(self):
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1)
        report = Report(self)
        with open(os.path.join(ROOT, "docs", "benchmarks.md"), "w") as f:
            f.write(report.markdown())
        report.chart(os.path.join(ROOT, "docs", "benchmarks.png"))

    def held_connections(self):
        """1,000 idle connections and 200 open streams held while a normal call is timed
        (bench/hold_connections.py writes its own section of the page)."""
        out = os.path.join(ROOT, "bench", "results", "held_connections.md")
        binary = os.path.join(self.build, "agency-mcp")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "hold_connections.py"),
                            binary, "--markdown", out], capture_output=True, text=True)
        log(r.stdout.strip() or r.stderr.strip())
        if r.returncode != 0:
            log("held connections: FAILED " + r.stderr.strip())

    def only(self, parts):
        """Some parts again, merged into the last full run's results."""
        with open(os.path.join(self.out, "results.json")) as f:
            self.results = json.load(f)
        scenarios = [p for p in parts if p in self.SCENARIOS]
        self.start_gateway()
        try:
            if "answer_sizes" in parts:
                self.answer_sizes()
            if scenarios:
                self.results["runs"] = [r for r in self.results["runs"]
                                        if r["scenario"] not in scenarios]
                self.run_scenarios(scenarios)
        finally:
            self.stop_gateway()
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.results.setdefault("partial_reruns", []).append(
            {"parts": parts, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
             "cpu": self.machine().get("cpu")})
        self.write()

    def main(self):
        self.results["machine"] = self.machine()
        self.results["command"] = "make bench"
        self.results["quick"] = bool(self.args.quick)
        started = time.time()
        self.start_gateway()
        try:
            self.tools_list()
            self.cold_start()
            self.cold_start_out_of_the_box()
            self.run_scenarios()
            self.answer_sizes()
            self.growth()
            self.held_connections()
            if not self.args.no_callgrind:
                self.callgrind()
                self.callgrind_cold()
        finally:
            self.stop_gateway()
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.results["duration_s"] = round(time.time() - started)
        self.results["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
        self.results["repeat"] = self.args.repeat
        self.write()
        log(f"done in {self.results['duration_s']} s: docs/benchmarks.md, docs/benchmarks.png")


def shown_transport(transport):
    return "http, 2026-07-28" if transport == "modern" else transport


def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, (int, float)) and abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


class Report:
    def __init__(self, bench):
        self.b = bench
        self.r = bench.results

    def ratio(self, a, b, key="calls_per_s"):
        """The median of the per-round ratios: both sides of a round ran within a minute of each
        other, so a slow spell on the (shared) machine cancels out instead of deciding a target.
        Falls back to the reported runs when rounds are missing."""
        if not a or not b or not b.get(key):
            return None
        pairs = [x.get(key) / y.get(key) for x, y in zip(a.get("rounds", []), b.get("rounds", []))
                 if x.get(key) and y.get(key)]
        if pairs:
            return statistics.median(pairs)
        return a.get(key, 0) / b[key]

    def targets(self):
        b, rows = self.b, []

        def row(what, target, measured, ok):
            rows.append(f"| {what} | {target} | {measured} | {'**holds**' if ok else '**missed**'} |")

        for transport, need in (("stdio", 5), ("http", 10)):
            for sc in ("list_keywords", "list_rankings", "generate_article"):
                a = b.find(sc, "agency", transport, 16)
                p = b.find(sc, "peer", transport, 16)
                d = b.find(sc, "direct", "http", 16)
                vs_peer = self.ratio(a, p)
                vs_direct = self.ratio(a, d)
                ok = (vs_peer or 0) >= need or (vs_direct is not None and vs_direct >= 0.85)
                measured = f"{fmt(vs_peer, 2)}× the peer"
                if vs_direct is not None:
                    measured += f"; {fmt(vs_direct * 100, 0)}% of the direct gateway"
                row(f"{sc}, 16 in flight, {transport}",
                    f"≥ {need}× peer, or ≥ 85% of direct", measured, ok)
        for transport in ("stdio", "http"):
            for c in (1, 16):
                a = b.find("list_keywords", "agency", transport, c)
                v = a.get("server_cpu_per_call_ms") if a else None
                row(f"server CPU per list_keywords call ({transport}, {c} in flight)", "≤ 0.15 ms",
                    f"{fmt(v, 3)} ms", v is not None and v <= 0.15)
        for a in self.r.get("answer_sizes", []):
            if a["era"] == "modern" and a["label"].startswith("list_keywords, no limit"):
                share = a["text_bytes"] / a["structured_bytes"] if a["structured_bytes"] else None
                row("default page (list_keywords, no limit): 2026-07-28 text beside structured "
                    "answer, every row", "≤ 65% of the structured bytes",
                    f"{fmt(share * 100 if share else None, 1)}% ({a['text_bytes']:,} of "
                    f"{a['structured_bytes']:,} bytes)", share is not None and share <= 0.65)
        for transport in ("stdio", "http"):
            cs = self.r["cold_start"].get(f"agency/{transport}", {})
            v = cs.get("median_ms")
            row(f"cold start to first answered call ({transport})", "< 20 ms",
                f"{fmt(v, 1)} ms (median of {cs.get('reps', 0)})", v is not None and v < 20)
        cs = self.r["cold_start"].get("agency/initialize_sample_fresh", {})
        v = cs.get("median_ms")
        row("spawn to `initialize` answer, no gateway configured (sample), fresh state dir (stdio)",
            "< 20 ms", f"{fmt(v, 1)} ms (median of {cs.get('reps', 0)})", v is not None and v < 20)
        idle = [r.get("idle_rss_kib", 0) for r in self.r["runs"] if r["impl"] == "agency"]
        idle_max = max(idle) / 1024 if idle else None
        row("RSS idle (largest over all agency runs)", "< 15 MiB", f"{fmt(idle_max)} MiB",
            idle_max is not None and idle_max < 15)
        parts, worst = [], None
        for sc in Bench.SCENARIOS:
            runs = [r for r in self.r["runs"]
                    if r["impl"] == "agency" and r["c"] == 16 and r["scenario"] == sc]
            if runs:
                top = max(r.get("server_rss_kib", 0) for r in runs) / 1024
                worst = top if worst is None else max(worst, top)
                parts.append(f"{sc} {top:.1f}")
        row("RSS after the 16-way load (largest of stdio and HTTP, MiB)", "< 40 MiB",
            "; ".join(parts), worst is not None and worst < 40)
        g = self.r["memory"].get("growth", {})
        samples = g.get("rss_samples", [])
        if len(samples) >= 3:
            mid, last = samples[len(samples) // 2][1], samples[-1][1]
            growth = (last - mid) / 1024
            row(f"growth over {g.get('ok', 0):,} calls (second half)", "none (< 1 MiB)",
                f"{growth:+.2f} MiB ({samples[0][1] / 1024:.1f} → {last / 1024:.1f} MiB)",
                abs(growth) < 1 and g.get("failed", 1) == 0)
        sizes = self.r.get("answer_sizes", [])
        legacy = [a for a in sizes if a["era"] == "legacy"]
        if legacy:
            default = next((a for a in legacy if "default page" in a["label"]), None)
            if default:
                row("default page (list_keywords, no limit): structured answer", "≤ ~6k tokens "
                    "(24,000 bytes)", f"{default['structured_bytes']:,} bytes",
                    default["structured_bytes"] <= 24_000)
            largest = max(a["structured_bytes"] for a in legacy)
            row("largest structured answer of the answer-size calls (no max_bytes)",
                "≤ ~25k tokens (100 KB)", f"{largest:,} bytes", largest <= 100_000)
        # The aggregate reads every row of its pages (no must_contain skip): what it adds on top
        # of the gateway's own paging time, per page of 1000 rows, at one call in flight.
        pages = Bench.SCENARIOS["ranking_changes"]["scan_pages"]
        for transport in ("stdio", "http"):
            a = b.find("ranking_changes", "agency", transport, 1)
            d = b.find("ranking_changes", "direct", "http", 1)
            if a and d and a.get("p50_ms") and d.get("p50_ms"):
                extra = (a["p50_ms"] - d["p50_ms"]) / pages
                row(f"ranking_changes (one month of demo-bulk: {pages} pages of 1000 rows, 500 "
                    f"keywords): time added to reading its pages, per page ({transport}, 1 in "
                    "flight, p50)", "≤ 0.5 ms",
                    f"{extra:.2f} ms ({fmt(a['p50_ms'])} vs {fmt(d['p50_ms'])} ms); peak RSS "
                    f"{fmt(a.get('server_hwm_kib', 0) / 1024)} MiB", extra <= 0.5)
        for transport in ("stdio", "http"):
            for c in (1, 16):
                a = b.find("list_rankings", "agency", transport, c)
                d = b.find("list_rankings", "direct", "http", c)
                if a and d and a.get("p50_ms") and d.get("p50_ms"):
                    t = self.ratio(a, d, "p50_ms")
                    row(f"list_rankings (100,000 rows) time vs bare paging read ({transport}, {c} in flight, p50)",
                        "≤ 1.2×", f"{t:.2f}× ({fmt(a['p50_ms'])} vs {fmt(d['p50_ms'])} ms); "
                        f"peak RSS {fmt(a.get('server_hwm_kib', 0) / 1024)} MiB", t <= 1.2)
        return rows

    def answer_table(self):
        sizes = self.r.get("answer_sizes", [])
        if not sizes:
            return []
        out = ["", "## Answer sizes", "",
               "What an assistant reads (tokens ≈ bytes / 4): the structured answer, and the text "
               "block beside it. Legacy eras (2025-06-18, 2025-11-25) carry the structured "
               "answer again as text, as the spec asks for clients that ignore "
               "structuredContent; the modern era (2026-07-28) carries the compact rendering "
               "instead: every row and member as lines and a table (docs/design.md, \"Text "
               "beside structuredContent\").", "",
               "| call | rows | truncated | structured bytes | text bytes, legacy | "
               "text bytes, modern | ~tokens (structured) |",
               "|---|---:|---|---:|---:|---:|---:|"]
        by_label = {label: {} for label, _, _ in Bench.ANSWERS}
        for a in sizes:
            by_label.setdefault(a["label"], {})[a["era"]] = a
        for label, eras in by_label.items():
            if not eras:
                continue
            l, m = eras.get("legacy", {}), eras.get("modern", {})
            sb = l.get("structured_bytes") or m.get("structured_bytes") or 0
            out.append(f"| {label} | {l.get('rows', m.get('rows'))} | "
                       f"{l.get('truncated', m.get('truncated'))} | {sb:,} | "
                       f"{l.get('text_bytes', 0):,} | {m.get('text_bytes', 0):,} | {sb // 4:,} |")
        return out

    def scenario_table(self):
        b = self.b
        out = ["| scenario | in flight | transport | server | calls/s | p50 ms | p90 ms | p99 ms "
               "| server CPU/call ms | peak RSS MiB | driver CPU/call ms | : peer | : direct |",
               "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for sc in Bench.SCENARIOS:
            for c in (1, 16):
                for transport in ("stdio", "http", "modern"):
                    for impl in ("agency", "peer", "direct"):
                        if impl == "direct" and transport != "http":
                            continue
                        r = b.find(sc, impl, transport, c)
                        if not r:
                            continue
                        peer = b.find(sc, "peer", transport, c)
                        direct = b.find(sc, "direct", "http", c)
                        rp = self.ratio(r, peer) if impl == "agency" else None
                        rd = self.ratio(r, direct) if impl == "agency" else None
                        name = {"agency": "agency-mcp", "peer": "TS SDK peer",
                                "direct": "gateway direct"}[impl]
                        bad = "" if r.get("failed", 1) == 0 else f" ⚠ {r.get('failed')} failed"
                        out.append(
                            f"| {sc} | {c} | {shown_transport(transport) if impl != 'direct' else 'HTTP GET'} | {name}{bad} "
                            f"| {fmt(r.get('calls_per_s'))} | {fmt(r.get('p50_ms'), 3)} "
                            f"| {fmt(r.get('p90_ms'), 3)} | {fmt(r.get('p99_ms'), 3)} "
                            f"| {fmt(r.get('server_cpu_per_call_ms'), 3)} "
                            f"| {fmt(r.get('server_hwm_kib', 0) / 1024)} "
                            f"| {fmt(r.get('driver_cpu_per_call_ms'), 3)} "
                            f"| {fmt(rp, 2) + '×' if rp else ''} | {fmt(rd, 2) + '×' if rd else ''} |")
        return out

    def markdown(self):
        r, m = self.r, self.r["machine"]
        lines = [
            "# Benchmarks",
            "",
            "<!-- Generated by `make bench` (bench/run.py); edit bench/findings.md or bench/run.py, not this file. -->",
            "",
            "agency-mcp measured beside a peer written with the official TypeScript SDK "
            "(`bench/peer`, `@modelcontextprotocol/sdk` 1.32.2 on express, pinned by its "
            "lockfile) and beside the gateway itself (the same reads sent straight to it). All "
            "three talk to one sample gateway process over loopback "
            f"(`agency-mcp sample-gateway --bulk-keyword-rows {BULK_ROWS}`), started once for the "
            "whole run. The load driver (`bench/driver.cpp`) speaks raw JSON-RPC: over stdio it "
            "spawns the server and keeps C requests in flight on the pipe; over HTTP it holds C "
            "keep-alive connections. Both MCP servers are driven in the legacy protocol era "
            "(`initialize` once, protocol version 2025-11-25, then `tools/call`), the era the "
            "TypeScript SDK speaks.",
            "",
            "## Command",
            "",
            "<!-- snippet: example: a release build, then about 6 minutes of load (ctest bench.smoke runs the load driver briefly) -->",
            "```sh",
            "make bench     # release build, bench deps (apt), npm ci in bench/peer, every scenario, this page",
            "```",
            "",
            "## Machine",
            "",
            f"- CPU: {m['cpu']}, {m['nproc']} cores (`nproc`); memory {m['memory']}",
            f"- kernel {m['kernel']}; {m['compiler']}; node {m['node']}",
            f"- load average at start: {' '.join(m['loadavg_start'])}, at the end: "
            f"{' '.join(m.get('loadavg_end', []))} (other work shares this machine)",
            f"- each configuration ran {r.get('repeat', 1)} times, interleaved; the tables show "
            "the run with the median calls/s (every run is in `bench/results/results.json`); "
            "ratios are the median of the per-round ratios (the two sides of a round ran "
            "within a minute of each other)",
            f"- run: {m['date']}, {r.get('duration_s', 0)} s"
            + (" (**--quick**: a quarter of the requests)" if r.get("quick") else "")
            + "".join(f"; {', '.join(p['parts'])} run again on {p['date']} ({p.get('cpu')})"
                      for p in r.get("partial_reruns", [])),
            "",
            "## Targets",
            "",
            "| target | wanted | measured | |",
            "|---|---|---|---|",
        ] + self.targets() + [
            "",
            "## Throughput and latency",
            "",
            "Server CPU per call is the server process's utime+stime (from `/proc/PID/stat`) over "
            "the measured calls, divided by their number (for the peer: the node process). Peak "
            "RSS is VmHWM. The direct gateway row is the same read sent to the gateway; its CPU "
            "column is the gateway's. The driver's own CPU per call shows it is not the limit.",
            "",
            "`list_keywords`: limit 100 on `demo-bulk`. `list_rankings`: one keyword "
            f"(`{KEYWORD}`), limit 1000, on the 100,000-row client: the gateway cannot filter "
            "by keyword, so every call pages through all 100 gateway pages of 1000 rows (the "
            "direct baseline makes the same 100 reads). `generate_article`: a new keyword per "
            "call (no direct baseline: the issue's baseline is for reads).",
            "",
            "`ranking_changes`: the keywords that dropped between 2026-10-14 and 2026-11-14 on "
            "`demo-bulk` (500 keywords), top 25, computed while the gateway's pages stream past; "
            "the direct baseline reads the same 16 pages of 1000 rows and does nothing with "
            "them.",
            "",
            "![throughput and p99 per scenario](benchmarks.png)",
            "",
        ] + self.scenario_table() + self.answer_table() + [
            "",
            "## Start-up, memory, size",
            "",
            "| | agency-mcp stdio | agency-mcp HTTP | peer stdio | peer HTTP |",
            "|---|---:|---:|---:|---:|",
        ]
        cs = r["cold_start"]
        keys = ["agency/stdio", "agency/http", "peer/stdio", "peer/http"]
        lines.append("| cold start to first answered `tools/call` (median ms) | " +
                     " | ".join(fmt(cs.get(k, {}).get("median_ms")) for k in keys) + " |")
        lines.append("| RSS right after that call (MiB) | " + " | ".join(
            fmt((cs.get(k, {}).get("rss_after_first_call_kib") or 0) / 1024) for k in keys) + " |")
        idle = {}
        for run in r["runs"]:
            k = f"{run['impl']}/{run['transport']}"
            if k in keys:
                idle.setdefault(k, []).append(run.get("idle_rss_kib", 0))
        lines.append("| RSS idle, initialized (median over runs, MiB) | " + " | ".join(
            fmt(statistics.median(idle[k]) / 1024 if idle.get(k) else None) for k in keys) + " |")
        after = {}
        for run in r["runs"]:
            if run["c"] == 16:
                k = f"{run['impl']}/{run['transport']}"
                after.setdefault(k, []).append(run.get("server_rss_kib", 0))
        lines.append("| RSS after a 16-way run (largest, MiB) | " + " | ".join(
            fmt(max(after[k]) / 1024 if after.get(k) else None) for k in keys) + " |")
        tl = r["tools_list_bytes"]
        lines.append(f"| bytes of the whole `tools/list` answer | {fmt(tl.get('agency'), 0)} | | "
                     f"{fmt(tl.get('peer'), 0)} | |")
        g = r["memory"].get("growth")
        if g:
            lines += ["", f"Growth check: {g.get('ok', 0):,} `list_keywords` calls at 16 in flight "
                      f"over HTTP ({fmt(g.get('calls_per_s'))} calls/s, {g.get('failed')} failed); "
                      "VmRSS along the way:", "",
                      "| calls done | " + " | ".join(f"{s[0]:,}" for s in g["rss_samples"]) + " |",
                      "|---|" + "---:|" * len(g["rss_samples"]),
                      "| VmRSS MiB | " + " | ".join(f"{s[1] / 1024:.1f}" for s in g["rss_samples"]) + " |"]
        cg = r["callgrind"]
        if cg:
            lines += ["", "## Instructions per call (callgrind)", "",
                      "`valgrind --tool=callgrind --dump-instr=no` around `agency-mcp serve` "
                      "(stdio, one call in flight), two runs of different lengths; the difference "
                      "divided by the difference in calls cancels start-up. Repeatable whatever "
                      "the machine's load. The heaviest functions (self cost, longer run) are in "
                      "`bench/results/callgrind-*.txt`.", "",
                      "| scenario | instructions per call |", "|---|---:|"]
            # cold_start: the whole process: exec, the first answered call, exit.
            labels = {"list_keywords": "list_keywords (limit 100)",
                      "list_rankings": "list_rankings (one keyword, 100 gateway pages)",
                      "cold_start": "cold start: the whole process (exec, the first answer, exit)"}
            for name, v in cg.items():
                lines.append(f"| {labels.get(name, name)} | {v['instructions_per_call']:,} |")
        # The soak's, the scale-out, the state-store and the agency's-day sections (make soak,
        # make bench-scale, make bench-store, make bench-day), kept across runs.
        for extra in ("held_connections.md", "soak.md", "scale.md", "store.md", "agency_day.md",
                      "fairness.md"):
            path = os.path.join(ROOT, "bench", "results", extra)
            if os.path.exists(path):
                lines += ["", open(path).read().rstrip()]
        findings = os.path.join(ROOT, "bench", "findings.md")
        if os.path.exists(findings):
            lines += ["", open(findings).read().rstrip()]
        return "\n".join(lines) + "\n"

    def chart(self, path):
        if not shutil.which("gnuplot"):
            log("gnuplot missing: no chart")
            return
        b = self.b
        data = os.path.join(b.tmp if os.path.isdir(b.tmp) else tempfile.mkdtemp(), "chart.dat")
        os.makedirs(os.path.dirname(data), exist_ok=True)
        with open(data, "w") as f:
            # columns: label, calls/s (agency, peer, direct), p99 ms (agency, peer, direct)
            for sc in Bench.SCENARIOS:
                for c in (1, 16):
                    for transport in ("stdio", "http"):
                        vals = []
                        for key in ("calls_per_s", "p99_ms"):
                            for impl in ("agency", "peer", "direct"):
                                r = b.find(sc, impl, "http" if impl == "direct" else transport, c)
                                vals.append(str(r.get(key, 0) or "NaN") if r and r.get("ok") else "NaN")
                        label = f"{sc.replace('_', '-')}\\nc={c} {transport}"
                        f.write(f"\"{label}\" " + " ".join(vals) + "\n")
        script = f"""
set terminal pngcairo size 1400,900 font "sans,9"
set output "{path}"
set multiplot layout 2,1
set bmargin 4
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y
set grid ytics
set key top right
set xtics nomirror font "sans,8"
set title "Throughput (calls/s, log scale; higher is better)"
plot "{data}" using 2:xtic(1) title "agency-mcp" lc rgb "#1f77b4", '' using 3 title "TypeScript SDK peer" lc rgb "#ff7f0e", '' using 4 title "gateway direct" lc rgb "#7f7f7f"
set title "p99 latency (ms, log scale; lower is better)"
plot "{data}" using 5:xtic(1) title "agency-mcp" lc rgb "#1f77b4", '' using 6 title "TypeScript SDK peer" lc rgb "#ff7f0e", '' using 7 title "gateway direct" lc rgb "#7f7f7f"
unset multiplot
"""
        proc = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
        if proc.returncode != 0:
            log("gnuplot failed: " + proc.stderr[-400:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build-release")
    ap.add_argument("--quick", action="store_true", help="a quarter of the requests (a trial run)")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--repeat", type=int, default=3,
                    help="rounds per configuration; the median run is reported (default 3)")
    ap.add_argument("--only", default="",
                    help="comma-separated parts to run again (answer_sizes, or a scenario name), "
                         "merged into bench/results/results.json; the rest is kept")
    ap.add_argument("--report-only", action="store_true",
                    help="regenerate docs/benchmarks.md and .png from bench/results/results.json")
    args = ap.parse_args()
    bench = Bench(args)
    if args.report_only:
        with open(os.path.join(bench.out, "results.json")) as f:
            bench.results = json.load(f)
        bench.write()
        return
    if args.only:
        bench.only(args.only.split(","))
        return
    bench.main()


if __name__ == "__main__":
    main()
