#!/usr/bin/env python3
"""The soak (`make soak`): agency-mcp over Streamable HTTP, 16 calls in flight for a bounded time,
against the sample gateway with faults injected into its requests (500s before and after the
work, timeouts, connection resets before and after the work, 429s).

The mix: reads; action tools (a new input each call); run_seo_audit as an MCP task (tasks/get
until it ends, then tasks/result) and as a job polled with get_audit_status; and the two
confirmed actions through the confirmation_id path (generate_article then deploy_article;
generate_outreach_email then send_prospect_email). Every JSON-RPC request is a call and must be
answered (a result or a JSON-RPC error) within --call-timeout.

Checks, each failing the run (exit status 1):
  - no crash: the server process is alive at the end and stops cleanly on SIGTERM;
  - every call answered;
  - no duplicate POSTs: no action ran twice at the gateway with the same body (the sample
    gateway's /_control/stats; each call's inputs are unique, and the retry-safe seo_audit and
    fetch_backlinks are not counted, spec rule 2);
  - flat RSS: the median of the server's VmRSS over the last quarter within max(4 MiB, 10%) of
    the first quarter's.

Writes bench/results/soak.json and bench/results/soak.md, and puts the latter into
docs/benchmarks.md as its "Soak" section. Traffic goes to 127.0.0.1 only. Standard library only.

  python3 bench/soak.py [--seconds 300] [--concurrency 16] [--build-dir build]
"""
import argparse
import http.client
import json
import os
import platform
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import free_port, write_results  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTOCOL = "2025-11-25"
CLIENTS = ["demo-dental", "demo-law"]  # no auto-deploy: articles stay drafts until deployed
READ_TIMEOUT_S = 2    # the server's waits on the gateway (AGENCY_GATEWAY_*_TIMEOUT_S)
ACTION_TIMEOUT_S = 3
# Each fault applies to a request with this chance (percent), every request ("*") of the run.
FAULTS = [
    ("fail_before", 1.0, None),      # HTTP 500, nothing done
    ("fail_after", 1.0, None),       # the work ran, then HTTP 500
    ("rate_limit", 0.5, 1),          # HTTP 429, Retry-After: 1
    ("drop", 0.5, None),             # the work ran, the connection cut mid-answer
    ("reset", 0.5, None),            # nothing done, the connection cut before the answer
    ("slow", 0.3, (ACTION_TIMEOUT_S + 1) * 1000),  # past the server's timeouts
]
# Tool -> the gateway action it POSTs (for POSTs against calls).
ACTION_OF = {
    "generate_article": "generate_blog", "optimize_page": "optimize_page",
    "index_url": "index_url", "generate_topical_map": "generate_topical_map",
    "generate_press_release": "generate_press_release", "generate_gbp_post": "generate_gbp_post",
    "run_local_grid_scan": "run_grid_search", "analyze_llm_visibility": "run_llm_visibility",
    "generate_keyword_ideas": "generate_keywords", "refresh_backlinks": "fetch_backlinks",
    "generate_outreach_email": "generate_outreach_email", "deploy_article": "deploy_blog",
    "send_prospect_email": "send_prospect_email", "run_seo_audit": "seo_audit",
}


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_s(pid):
    """utime + stime of a process, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Unanswered(Exception):
    pass


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = 0
        self.by_method = {}
        self.outcomes = {}       # "ok", "tool_error:<reason>", "rpc_error:<code>", "unanswered:.."
        self.tool_calls = {}     # tool -> calls (confirmed calls counted once per call)
        self.latencies = []
        self.unanswered = []     # a few examples
        self.scenarios = {}

    def record(self, method, tool, outcome, seconds):
        with self.lock:
            self.calls += 1
            key = tool or method
            self.by_method[key] = self.by_method.get(key, 0) + 1
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
            if tool:
                self.tool_calls[tool] = self.tool_calls.get(tool, 0) + 1
            if len(self.latencies) < 2_000_000:
                self.latencies.append(seconds)

    def scenario(self, name):
        with self.lock:
            self.scenarios[name] = self.scenarios.get(name, 0) + 1


class Session:
    """One MCP session (legacy era, no client capabilities: confirmations come back as a
    confirmation_id) on one keep-alive connection."""

    def __init__(self, port, stats, call_timeout, watch):
        self.port = port
        self.stats = stats
        self.call_timeout = call_timeout
        self.watch = watch  # [start time or None, connection], read by the watchdog
        self.conn = None
        self.session_id = None
        self.next_id = 1
        self.connect()
        init = self.call("initialize", {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "agency-soak", "version": "1"}})
        if "result" not in init:
            raise RuntimeError(f"initialize failed: {init}")
        self.notify("notifications/initialized")

    def connect(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.call_timeout)
        self.watch[1] = self.conn

    def headers(self):
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": PROTOCOL}
        if self.session_id:
            h["Mcp-Session-Id"] = self.session_id
        return h

    def post(self, payload):
        body = json.dumps(payload)
        self.conn.request("POST", "/mcp", body=body, headers=self.headers())
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.getheader("Mcp-Session-Id"):
            self.session_id = resp.getheader("Mcp-Session-Id")
        return resp.status, resp.getheader("Content-Type", ""), data

    def notify(self, method):
        self.post({"jsonrpc": "2.0", "method": method})

    def call(self, method, params, tool=None):
        """One JSON-RPC request; returns the response message (result or error). Raises
        Unanswered when none came back in time."""
        rid = self.next_id
        self.next_id += 1
        start = time.monotonic()
        self.watch[0] = start
        try:
            status, ctype, data = self.post(
                {"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            message = self.parse(rid, status, ctype, data)
        except (OSError, http.client.HTTPException, ValueError) as e:
            elapsed = time.monotonic() - start
            kind = "timeout" if elapsed >= self.call_timeout else type(e).__name__
            self.stats.record(method, tool, f"unanswered:{kind}", elapsed)
            with self.stats.lock:
                if len(self.stats.unanswered) < 10:
                    self.stats.unanswered.append(f"{tool or method}: {kind}: {e}"[:300])
            self.connect()
            raise Unanswered(kind)
        finally:
            self.watch[0] = None
        elapsed = time.monotonic() - start
        if elapsed > self.call_timeout:
            self.stats.record(method, tool, "unanswered:late", elapsed)
            raise Unanswered("late")
        if "error" in message:
            outcome = f"rpc_error:{message['error'].get('code')}"
        else:
            result = message.get("result", {})
            outcome = "ok"
            if isinstance(result, dict) and result.get("isError"):
                outcome = "tool_error:" + tool_reason(result)
            elif isinstance(result, dict) and "note" in (result.get("structuredContent") or {}):
                # The gateway's answer failed, but a check showed the action had run.
                outcome = "ok, recovered (ran once despite a failed answer)"
        self.stats.record(method, tool, outcome, elapsed)
        return message

    @staticmethod
    def parse(rid, status, ctype, data):
        if "text/event-stream" in ctype:
            for event in data.decode("utf-8", "replace").split("\n\n"):
                lines = [l[5:].lstrip() for l in event.split("\n") if l.startswith("data:")]
                if not lines:
                    continue
                msg = json.loads("\n".join(lines))
                if isinstance(msg, dict) and msg.get("id") == rid and (
                        "result" in msg or "error" in msg):
                    return msg
            raise ValueError(f"HTTP {status}: the stream ended without the answer")
        msg = json.loads(data)
        if not isinstance(msg, dict) or ("result" not in msg and "error" not in msg):
            raise ValueError(f"HTTP {status}: not a JSON-RPC answer: {data[:200]!r}")
        return msg

    def tool(self, name, arguments, task=None):
        params = {"name": name, "arguments": arguments}
        if task is not None:
            params["task"] = task
        return self.call("tools/call", params, tool=name)


def tool_reason(result):
    try:
        text = result["content"][0]["text"]
        return json.loads(text)["error"]["reason"]
    except (KeyError, IndexError, TypeError, ValueError):
        return "unparsed"


def structured(message):
    result = message.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return None
    return result.get("structuredContent")


class Worker(threading.Thread):
    def __init__(self, index, soak):
        super().__init__(daemon=True)
        self.index = index
        self.soak = soak
        self.rng = random.Random(soak.seed * 1000 + index)
        self.n = 0
        self.watch = [None, None]
        self.error = None

    def token(self):
        self.n += 1
        return f"{self.soak.run_id}-w{self.index}-{self.n}"

    def run(self):
        try:
            self.session = Session(self.soak.port, self.soak.stats, self.soak.call_timeout,
                                   self.watch)
        except Exception as e:  # noqa: BLE001 - reported as the run's failure
            self.error = f"worker {self.index} could not start a session: {e}"
            return
        scenarios = [(self.read, 50), (self.action, 25), (self.audit_task, 6),
                     (self.audit_job, 6), (self.deploy, 7), (self.send, 6)]
        funcs, weights = zip(*scenarios)
        while time.monotonic() < self.soak.deadline:
            scenario = self.rng.choices(funcs, weights)[0]
            self.soak.stats.scenario(scenario.__name__)
            try:
                scenario(self.rng.choice(CLIENTS))
            except Unanswered:
                pass

    # --- scenarios -----------------------------------------------------------------------------

    def read(self, client):
        tool, args = self.rng.choice([
            ("list_keywords", {"limit": 20}), ("list_articles", {"limit": 20}),
            ("get_client", {}), ("list_audits", {"limit": 5}), ("list_backlinks", {"limit": 20}),
            ("list_citations", {}), ("list_calls", {}), ("list_reports", {}),
        ])
        self.session.tool(tool, dict(args, client_id=client))

    def action(self, client):
        t = self.token()
        tool, args = self.rng.choice([
            ("generate_article", {"keyword": f"soak article {t}"}),
            ("optimize_page", {"url": f"https://soak.example/{t}/opt"}),
            ("index_url", {"url": f"https://soak.example/{t}/ix"}),
            ("generate_topical_map", {"topic": f"soak map {t}"}),
            ("generate_press_release", {"topic": f"soak news {t}"}),
            ("generate_gbp_post", {"topic": f"soak post {t}"}),
            ("run_local_grid_scan", {"keyword": f"soak scan {t}"}),
            ("analyze_llm_visibility", {"prompt": f"who is best at {t}?"}),
            ("generate_keyword_ideas", {"seed": f"soak seed {t}"}),
            ("refresh_backlinks", {}),
        ])
        self.session.tool(tool, dict(args, client_id=client))

    def wait_task(self, task_id, until):
        while time.monotonic() < until:
            got = self.session.call("tasks/get", {"taskId": task_id})
            status = (got.get("result") or {}).get("status")
            if status in ("completed", "failed", "cancelled") or "error" in got:
                return status
            time.sleep(0.2)
        return None

    def audit_task(self, client):
        t = self.token()
        created = self.session.tool("run_seo_audit",
                                    {"client_id": client, "url": f"https://soak.example/{t}/"},
                                    task={"ttl": 60000})  # expires within the run
        task = (created.get("result") or {}).get("task")
        if not task:
            return
        status = self.wait_task(task["taskId"], time.monotonic() + self.soak.call_timeout)
        if status is None:
            self.soak.stats.record("tasks/get", None, "unanswered:task_never_ended",
                                   self.soak.call_timeout)
            return
        self.session.call("tasks/result", {"taskId": task["taskId"]})

    def audit_job(self, client):
        t = self.token()
        queued = structured(self.session.tool(
            "run_seo_audit", {"client_id": client, "url": f"https://soak.example/{t}/job"}))
        if not queued or "audit_id" not in queued:
            return
        until = time.monotonic() + self.soak.call_timeout
        while time.monotonic() < until:
            got = structured(self.session.tool(
                "get_audit_status", {"client_id": client, "audit_id": queued["audit_id"]}))
            if got is None or got.get("status") in ("succeeded", "failed", "cancelled"):
                return
            time.sleep(0.2)
        self.soak.stats.record("tools/call", None, "unanswered:job_never_ended",
                               self.soak.call_timeout)

    def confirmed(self, tool, args):
        preview = structured(self.session.tool(tool, args))
        if not preview or preview.get("status") != "confirmation_required":
            return
        self.session.tool(tool, dict(args, confirmation_id=preview["confirmation_id"]))

    def deploy(self, client):
        t = self.token()
        made = structured(self.session.tool(
            "generate_article", {"client_id": client, "keyword": f"soak deploy {t}"}))
        if made and made.get("article_id"):
            self.confirmed("deploy_article", {"client_id": client, "article_id": made["article_id"]})

    def send(self, client):
        t = self.token()
        made = structured(self.session.tool(
            "generate_outreach_email", {"client_id": client,
                                        "prospect": f"https://p{t}.example/links"}))
        if made and made.get("email_id"):
            self.confirmed("send_prospect_email", {"client_id": client,
                                                   "email_id": made["email_id"]})


class Soak:
    def __init__(self, args):
        self.args = args
        self.build = os.path.join(ROOT, args.build_dir)
        self.agency = os.path.join(self.build, "agency-mcp")
        self.seconds = args.seconds
        self.concurrency = args.concurrency
        self.call_timeout = args.call_timeout
        self.seed = args.seed
        self.run_id = f"{int(time.time()) % 100000}"
        self.stats = Stats()
        self.tmp = tempfile.mkdtemp(prefix="agency-soak-")
        self.rss = []  # (seconds since start, KiB)
        self.samples = []  # (seconds since start, calls, server CPU s, gateway CPU s)

    def control(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.gateway_port, timeout=30)
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read() or b"null")
        conn.close()
        if resp.status != 200:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status} {data}")
        return data

    def start(self):
        if not os.access(self.agency, os.X_OK):
            raise SystemExit(f"{self.agency} is missing: build it first (make soak does)")
        self.gateway_port = free_port()
        self.gateway = subprocess.Popen(
            [self.agency, "--log-level", "warn", "sample-gateway",
             "--listen", f"127.0.0.1:{self.gateway_port}"]
            + (["--bare-records"] if self.args.bare_records else []),
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.tmp, "gateway.log"), "w"),
            text=True)
        self.gateway_url = self.gateway.stdout.readline().strip()
        if not self.gateway_url.startswith("http://127.0.0.1"):
            raise SystemExit("the sample gateway did not start")
        self.port = free_port()
        env = dict(os.environ, AGENCY_GATEWAY_URL=self.gateway_url,
                   AGENCY_GATEWAY_READ_TIMEOUT_S=str(READ_TIMEOUT_S),
                   AGENCY_GATEWAY_ACTION_TIMEOUT_S=str(ACTION_TIMEOUT_S))
        env.pop("AGENCY_API_KEY", None)
        self.server_log = os.path.join(self.tmp, "server.log")
        self.server = subprocess.Popen(
            [self.agency, "--log-level", "warn", "serve", "--http", "--rate-limit", "off",
             "--listen", f"127.0.0.1:{self.port}",
             "--state-db", os.path.join(self.tmp, "state.db"),
             # The per-client credit limiter would refuse most generation calls at 16 in
             # flight; the soak is about faults, not the limiter.
             "--max-actions-in-flight-per-client", "64",
             "--max-actions-per-minute-per-client", "1000000"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(self.server_log, "w"))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise SystemExit(f"the server exited at start; see {self.server_log}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("the server did not start listening")
        # Faults from now on, for every request of the run.
        for mode, percent, n in FAULTS:
            fault = {"target": "*", "mode": mode, "percent": percent, "count": 0}
            if mode == "slow":
                fault["delay_ms"] = n
            if mode == "rate_limit":
                fault["retry_after_s"] = n
            self.control("POST", "/_control/faults", fault)
        log(f"gateway {self.gateway_url} (faults on), server http://127.0.0.1:{self.port}/mcp "
            f"(pid {self.server.pid}), {self.concurrency} in flight for {self.seconds} s")

    def watchdog(self, workers, stop):
        """Samples the server's RSS every second, and cuts a call that outlived its timeout
        (a stream that stays open on keepalives would otherwise never end)."""
        t0 = time.monotonic()
        while not stop.is_set():
            kib = rss_kib(self.server.pid)
            if kib is not None:
                self.rss.append((time.monotonic() - t0, kib))
            self.samples.append((time.monotonic() - t0, self.stats.calls,
                                 cpu_s(self.server.pid), cpu_s(self.gateway.pid)))
            now = time.monotonic()
            for w in workers:
                started, conn = w.watch
                if started is not None and now - started > self.call_timeout + 5 and conn:
                    try:
                        conn.sock.shutdown(socket.SHUT_RDWR)
                    except (OSError, AttributeError):
                        pass
            stop.wait(1.0)

    def run(self):
        self.start()
        started = time.time()
        self.deadline = time.monotonic() + self.seconds
        workers = [Worker(i, self) for i in range(self.concurrency)]
        stop = threading.Event()
        watch = threading.Thread(target=self.watchdog, args=(workers, stop), daemon=True)
        watch.start()
        for w in workers:
            w.start()
        last = time.monotonic()
        while any(w.is_alive() for w in workers):
            time.sleep(0.5)
            if time.monotonic() - last >= 30:
                last = time.monotonic()
                rss = self.rss[-1][1] / 1024 if self.rss else 0
                log(f"{self.stats.calls} calls, RSS {rss:.1f} MiB")
            # A worker past the deadline finishes its scenario (each call bounded by the
            # call timeout, cut by the watchdog); give up on one that does not.
            if time.monotonic() > self.deadline + 4 * self.call_timeout + 30:
                break
        hung = [w.index for w in workers if w.is_alive()]
        stop.set()
        watch.join()
        duration = time.time() - started
        alive = self.server.poll() is None
        gateway_alive = self.gateway.poll() is None
        gw = self.control("GET", "/_control/stats") if gateway_alive else {}
        exit_code = None
        if alive:
            self.server.send_signal(signal.SIGTERM)
            try:
                exit_code = self.server.wait(30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                exit_code = "killed after 30 s"
        self.gateway.terminate()
        try:
            self.gateway.wait(10)
        except subprocess.TimeoutExpired:
            self.gateway.kill()
        return self.report(duration, alive, gateway_alive, exit_code, gw, hung,
                           [w.error for w in workers if w.error])

    # --- report --------------------------------------------------------------------------------

    def report(self, duration, alive, gateway_alive, exit_code, gw, hung, worker_errors):
        s = self.stats
        quarter = max(1, len(self.rss) // 4)
        first = [k for _, k in self.rss[:quarter]]
        last = [k for _, k in self.rss[-quarter:]]
        rss = {
            "samples": len(self.rss),
            "start_mib": round(self.rss[0][1] / 1024, 1) if self.rss else None,
            "end_mib": round(self.rss[-1][1] / 1024, 1) if self.rss else None,
            "peak_mib": round(max(k for _, k in self.rss) / 1024, 1) if self.rss else None,
            "first_quarter_median_mib": round(statistics.median(first) / 1024, 1) if first else None,
            "last_quarter_median_mib": round(statistics.median(last) / 1024, 1) if last else None,
        }
        growth_kib = (statistics.median(last) - statistics.median(first)) if first else 0
        allowed_kib = max(4 * 1024, 0.10 * statistics.median(first)) if first else 0
        rss["growth_mib"] = round(growth_kib / 1024, 2)
        half = [k for _, k in self.rss[len(self.rss) // 2: len(self.rss) // 2 + quarter]]
        rss["second_half_growth_mib"] = (
            round((statistics.median(last) - statistics.median(half)) / 1024, 2) if half else None)
        # Throughput and CPU per call, first quarter against last quarter.
        phases = {}
        n = len(self.samples)
        if n >= 8:
            for name, (a, b) in {"first_quarter": (0, n // 4),
                                 "last_quarter": (n - 1 - n // 4, n - 1)}.items():
                t_a, c_a, s_a, g_a = self.samples[a]
                t_b, c_b, s_b, g_b = self.samples[b]
                calls = max(1, c_b - c_a)
                phases[name] = {
                    "calls_per_s": round(calls / max(1e-9, t_b - t_a), 1),
                    "server_cpu_ms_per_call": round((s_b - s_a) * 1000 / calls, 3)
                    if s_a is not None and s_b is not None else None,
                    "gateway_cpu_ms_per_call": round((g_b - g_a) * 1000 / calls, 3)
                    if g_a is not None and g_b is not None else None}
        unanswered = sum(v for k, v in s.outcomes.items() if k.startswith("unanswered"))
        lat = sorted(s.latencies)
        pct = (lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1)) if lat else (
            lambda p: None)
        posts = gw.get("posts_by_action", {})
        executions = gw.get("executions_by_action", {})
        duplicates = gw.get("duplicate_executions_by_action", {})
        per_action = {}
        for tool, action in ACTION_OF.items():
            calls = s.tool_calls.get(tool, 0)
            per_action[action] = {
                "tool": tool, "tool_calls": calls, "posts": posts.get(action, 0),
                "executions": executions.get(action, 0),
                "duplicate_executions": duplicates.get(action, 0)}
        checks = {
            "server alive at the end (no crash)": alive,
            "server stopped cleanly on SIGTERM": exit_code == 0,
            "sample gateway alive at the end": gateway_alive,
            "every call answered": unanswered == 0 and not hung and not worker_errors,
            "no duplicate POSTs (no action ran twice)": gateway_alive and
            gw.get("duplicate_executions", 1) == 0,
            "flat RSS (last quarter within max(4 MiB, 10%) of the first)":
                bool(first) and growth_kib <= allowed_kib,
            "calls were made": s.calls > 0,
        }
        result = {
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpu": cpu_model(), "cores": os.cpu_count(),
            "kernel": platform.release(),
            "duration_s": round(duration, 1), "concurrency": self.concurrency,
            "bare_records": self.args.bare_records,
            "call_timeout_s": self.call_timeout,
            "gateway_timeouts_s": {"read": READ_TIMEOUT_S, "action": ACTION_TIMEOUT_S},
            "faults": [{"mode": m, "percent": p} for m, p, _ in FAULTS],
            "calls": s.calls, "calls_per_s": round(s.calls / duration, 1) if duration else 0,
            "latency_ms": {"p50": pct(0.50), "p99": pct(0.99), "max": pct(1.0)},
            "phases": phases,
            "by_method": dict(sorted(s.by_method.items())),
            "outcomes": dict(sorted(s.outcomes.items(), key=lambda kv: -kv[1])),
            "scenarios": s.scenarios,
            "unanswered": unanswered, "unanswered_examples": s.unanswered,
            "hung_workers": hung, "worker_errors": worker_errors,
            "server_alive": alive, "server_exit_code": exit_code,
            "rss": rss,
            "gateway": {"gets": gw.get("gets"), "posts": gw.get("posts"),
                        "faults_by_mode": gw.get("faults_by_mode", {}),
                        "duplicate_executions": gw.get("duplicate_executions"),
                        "duplicate_examples": gw.get("duplicate_examples", [])},
            "per_action": per_action,
            "checks": checks,
            "passed": all(checks.values()),
            "server_log": self.server_log,
        }
        return result


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def markdown(r):
    lines = [
        "## Soak",
        "",
        "<!-- Generated by `make soak` (bench/soak.py); bench/results/soak.json has every figure. -->",
        "",
        f"`make soak` (`SOAK_SECONDS`, default 300): agency-mcp over Streamable HTTP, "
        f"{r['concurrency']} calls in flight, against the sample gateway with faults on every "
        f"request: "
        + ", ".join(f"{f['mode']} {f['percent']:g}%" for f in r["faults"])
        + f" (slow = past the server's gateway timeouts, {r['gateway_timeouts_s']['read']} s "
        f"for reads and {r['gateway_timeouts_s']['action']} s for actions; drop and fail_after "
        "after the work ran, reset and fail_before before). The mix: reads, action tools, "
        "run_seo_audit as a task (tasks/get, tasks/result) and as a job polled with "
        "get_audit_status, and deploy_article / send_prospect_email through the "
        "confirmation_id path. Each call's inputs are unique, so an action that ran twice at "
        "the gateway with the same body is a duplicate.",
        "",
        f"- machine: {r['cpu']}, {r['cores']} cores, kernel {r['kernel']}; run {r['when']}",
        "- gateway rows: " + ("bare (`--bare-records`: no deployed_at or sent_at, index_url "
                              "records nothing)" if r.get("bare_records") else
                              "the sample's full rows"),
        f"- duration: {r['duration_s']} s; calls: {r['calls']:,} ({r['calls_per_s']}/s); "
        f"latency p50 {r['latency_ms']['p50']} ms, p99 {r['latency_ms']['p99']} ms, "
        f"max {r['latency_ms']['max']} ms",
        f"- RSS: start {r['rss']['start_mib']} MiB, end {r['rss']['end_mib']} MiB, peak "
        f"{r['rss']['peak_mib']} MiB; median of the first quarter "
        f"{r['rss']['first_quarter_median_mib']} MiB, of the last quarter "
        f"{r['rss']['last_quarter_median_mib']} MiB ({r['rss']['growth_mib']:+} MiB; "
        f"{r['rss']['second_half_growth_mib']:+} MiB over the second half)",
        *([f"- throughput, first quarter against last: "
           + " against ".join(
               f"{p['calls_per_s']} calls/s (server CPU {p['server_cpu_ms_per_call']} ms a call, "
               f"sample gateway CPU {p['gateway_cpu_ms_per_call']} ms a call)"
               for p in (r["phases"]["first_quarter"], r["phases"]["last_quarter"]))]
          if r.get("phases") else []),
        f"- gateway: {r['gateway']['gets']:,} GETs, {r['gateway']['posts']:,} POSTs; faults "
        "applied: " + ", ".join(f"{k} {v:,}" for k, v in
                                sorted(r["gateway"]["faults_by_mode"].items())),
        f"- duplicate POSTs (an action run twice with the same body): "
        f"{r['gateway']['duplicate_executions']}; calls unanswered: {r['unanswered']}; "
        f"server alive at the end: {'yes' if r['server_alive'] else 'NO'}, exit status on "
        f"SIGTERM: {r['server_exit_code']}",
        "",
        "| check | |",
        "|---|---|",
    ]
    for name, ok in r["checks"].items():
        lines.append(f"| {name} | {'**holds**' if ok else '**FAILS**'} |")
    lines += ["", "Answers by kind (every JSON-RPC request is a call; a tool error is an "
              "answer, with its reason):", "", "| answer | calls |", "|---|---:|"]
    for k, v in r["outcomes"].items():
        lines.append(f"| {k} | {v:,} |")
    lines += ["", "POSTs per action: the tool's calls (a confirmed tool's preview call "
              "included), the POSTs the gateway received (re-sends after a 429, or after a "
              "check showed the action had not run, included), and the times the action ran.",
              "", "| action (tool) | tool calls | POSTs | ran | ran twice |",
              "|---|---:|---:|---:|---:|"]
    for action, v in r["per_action"].items():
        lines.append(f"| {action} ({v['tool']}) | {v['tool_calls']:,} | {v['posts']:,} | "
                     f"{v['executions']:,} | {v['duplicate_executions']} |")
    lines.append("")
    lines.append("seo_audit and fetch_backlinks are retry-safe (spec rule 2): they are re-sent "
                 "after a 5xx and their repeats are not duplicates. An `outcome_unknown` answer "
                 "is an action that may or may not have run (no answer in time, or a cut "
                 "connection, with nothing found yet; an index_url or generate_keywords, which "
                 "leave nothing to check): it was sent once and the answer says how to check. "
                 "A recovered answer is one whose gateway answer failed (a 500 or a cut "
                 "connection after the work) where reading what the action changes showed it "
                 "had run.")
    lines.append("")
    lines.append("Calls per second fall over the run because of the sample gateway, not the "
                 "server: the fixture rebuilds a table's sort index after each write and scans "
                 "the whole table for a filtered read, so its CPU per call grows as the run's "
                 "records fill its tables, while the server's stays near its first-quarter "
                 "figure (the throughput line above); both share the machine's cores.")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("SOAK_SECONDS", "300")))
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--call-timeout", type=float, default=60,
                    help="seconds within which every call must be answered (default 60)")
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bare-records", action="store_true",
                    help="the sample gateway writes only the fields the spec names "
                         "(sample-gateway --bare-records)")
    ap.add_argument("--no-docs", action="store_true",
                    help="do not write bench/results/soak.* or docs/benchmarks.md")
    args = ap.parse_args()
    soak = Soak(args)
    try:
        r = soak.run()
    finally:
        for proc in (getattr(soak, "server", None), getattr(soak, "gateway", None)):
            if proc is not None and proc.poll() is None:
                proc.kill()
    print(json.dumps({k: r[k] for k in ("duration_s", "calls", "unanswered", "rss", "phases", "checks",
                                        "passed")}, indent=1))
    print(f"answers: {json.dumps(r['outcomes'])}")
    print(f"gateway: {json.dumps(r['gateway'])}")
    if not args.no_docs:
        write_results("soak", {k: v for k, v in r.items() if k != "server_log"}, markdown(r),
                      "Soak")
        log("bench/results/soak.json, bench/results/soak.md, docs/benchmarks.md (Soak)")
    failed = [name for name, ok in r["checks"].items() if not ok]
    if failed:
        log("FAILED: " + "; ".join(failed) + f" (server log: {r['server_log']})")
        sys.exit(1)
    log("every check holds")


if __name__ == "__main__":
    main()
