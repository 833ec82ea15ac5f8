#!/usr/bin/env python3
"""State stores (`make bench-store`): the action tools generate_article and run_seo_audit, and
the read tool get_client, on one agency-mcp instance over Streamable HTTP (2026-07-28, bench's
driver `--transport modern`), on an SQLite file and on a throwaway PostgreSQL cluster
(scripts/pg-cluster.sh with pg_stat_statements), each with the store round trips per call: two
instances up at once, each tool's rounds interleaved between them.

Round trips are counted on PostgreSQL exactly: pg_stat_statements is reset before a run and the
`calls` of every statement the instance sent are summed after it (with its default track = top,
a statement the server ran for the client is one, and a PL/pgSQL function's own statements run
inside the one call that sent them: the count is of what crossed the wire, and a batch of
statements, pipelined or in one string, would count as many as it holds) (the extension's own and this
script's polling are left out), less the instance's housekeeping (lease renewals, orphan
scans: per period, not per call; told apart by their text). For run_seo_audit the count is taken once its
background jobs have all succeeded; the job worker's statements (claim, finish, the reads that
tell subscribers) are told apart from the call's by their text. SQLite makes the same Store
calls in-process: there is no round trip to count. Writes bench/results/store.json and
bench/results/store.md, and puts the latter into docs/benchmarks.md as its "State stores"
section (bench/run.py keeps it). Standard library only.

  python3 bench/store.py [--build-dir build-release] [--requests 3000] [--audits 300] [-c 4]
                        [--rounds 5]
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import ROOT, Deployment, cpu_seconds, wait_line, write_results  # noqa: E402

SECRET = "bench-store-secret-0123456789abcdef0123"
PG_CLUSTER = os.path.join(ROOT, "scripts", "pg-cluster.sh")
POLL_MARK = "/* bench-store poll */"
# A client with auto_deploy off: generate_article goes straight to the gateway (no preview).
CLIENT = "demo-dental"
# (label, tool, arguments, calls key): {i} is the request's index.
RUNS = [
    ("get_client", "get_client", '{"client_id":"%s"}' % CLIENT, "requests"),
    ("generate_article", "generate_article",
     '{"client_id":"%s","keyword":"bench keyword {i}"}' % CLIENT, "requests"),
    ("generate_article, idempotency_key", "generate_article",
     '{"client_id":"%s","keyword":"bench keyword {i}","idempotency_key":"bench-{i}"}' % CLIENT,
     "requests"),
    ("run_seo_audit", "run_seo_audit",
     '{"client_id":"%s","url":"https://brightsmiledental.example/page-{i}"}' % CLIENT, "audits"),
]
# The audit job worker's statements (not the call's): claim, finish, and the job reads that
# tell change listeners (resource subscribers, tasks).
JOB_WORKER = re.compile(r"^\s*(WITH b AS \(SELECT id, kind|UPDATE jobs SET status = CASE"
                        r"|SELECT id, kind, client_id.* FROM jobs WHERE id = )", re.S)
# Per instance and per period, not per call: lease renewals, cancels seen, orphan and expiry
# scans. Each task lease renewal runs in a transaction of its own (a BEGIN and a COMMIT more).
HOUSEKEEPING = re.compile(r"^\s*(UPDATE (tasks|jobs) SET lease_until_ms = (\$2|0) WHERE lease_owner"
                          r"|DELETE FROM tasks WHERE ttl_ms"
                          r"|SELECT .* FROM tasks WHERE status IN \('working','input_required'\)"
                          r"|SELECT .* FROM jobs WHERE status (= 'queued' OR|IN \('queued'))", re.S)
TASK_RENEW = re.compile(r"^\s*UPDATE tasks SET lease_until_ms = \$2 WHERE lease_owner")


def log(msg):
    print(f"[bench-store {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Postgres:
    """A throwaway cluster with pg_stat_statements; queries through psql."""

    def __init__(self, directory):
        self.dir = directory
        run = subprocess.run(["bash", PG_CLUSTER, "start", directory], capture_output=True,
                             text=True, timeout=60,
                             env={**os.environ, "PG_EXTRA_OPTS":
                                  "-c shared_preload_libraries=pg_stat_statements "
                                  "-c pg_stat_statements.max=1000"})
        if run.returncode != 0:
            raise RuntimeError(f"scripts/pg-cluster.sh start: {run.stderr}")
        self.url = run.stdout.strip().splitlines()[-1]
        self.sql("CREATE EXTENSION pg_stat_statements")

    def sql(self, query):
        run = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", self.url, "-c", query],
                             capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            raise RuntimeError(f"psql: {run.stderr}")
        return [line.split("\t") for line in run.stdout.splitlines() if line]

    def reset(self):
        self.sql("SELECT pg_stat_statements_reset()")

    def statements(self):
        """{query text: (calls, mean execution ms)} of the instance's statements since the
        last reset."""
        rows = self.sql("SELECT calls, round(mean_exec_time::numeric, 4), "
                        "replace(query, E'\\n', ' ') FROM pg_stat_statements")
        return {q: (int(c), float(ms)) for c, ms, q in rows
                if "pg_stat_statements" not in q and "bench-store poll" not in q}

    def stop(self):
        subprocess.run(["bash", PG_CLUSTER, "stop", self.dir], capture_output=True, timeout=60)


class StoreBench(Deployment):
    """One sample gateway (Deployment.start's first part) and one instance per store."""

    def __init__(self, args):  # Deployment's fields without its HAProxy check
        self.args = args
        self.build = os.path.join(ROOT, args.build_dir)
        self.agency = os.path.join(self.build, "agency-mcp")
        self.driver = os.path.join(self.build, "agency_bench_driver")
        for path in (self.agency, self.driver):
            if not os.access(path, os.X_OK):
                sys.exit(f"{path} is missing: build agency-mcp and agency_bench_driver first")
        self.tmp = tempfile.mkdtemp(prefix="agency-bench-store-")
        os.chmod(self.tmp, 0o711)  # the PostgreSQL cluster, run as `postgres`, lives below
        self.procs, self.pg_dir = [], None

    def gateway_start(self):
        gw = self.spawn([self.agency, "--log-level", "warn", "sample-gateway", "--listen",
                         "127.0.0.1:0"])
        self.gateway_url = wait_line(gw, r"(http://127\.0\.0\.1:\d+/api)", "sample gateway").group(1)
        self.gateway = gw
        subprocess.Popen(["cat"], stdin=gw.stdout, stdout=subprocess.DEVNULL)

    def instance(self, state):
        proc = self.spawn([self.agency, "serve", "--http", "--listen", "127.0.0.1:0",
                           "--gateway-url", self.gateway_url, *state, "--rate-limit", "off",
                           "--max-actions-per-minute-per-client", "100000000",
                           "--max-actions-in-flight-per-client", "1024"],
                          env={"AGENCY_SERVER_SECRET": SECRET})
        url = wait_line(proc, r"MCP over Streamable HTTP at (http://\S+)", "instance").group(1)
        subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
        return proc, url

    def drive_args(self, url, tool, args, n, warmup):
        argv = [self.driver, "--transport", "modern", "--url", url, "--tool", tool, "--args", args,
                "-n", str(n), "--warmup", str(warmup), "-c", str(self.args.concurrency),
                "--max-seconds", "600"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=700)
        if not proc.stdout.strip():
            raise RuntimeError(f"driver: {proc.stderr}")
        result = json.loads(proc.stdout)
        if result["failed"]:
            raise RuntimeError(f"driver: {result['failed']} failed: {result['first_failure']}")
        return result

    def jobs_done(self, count_succeeded, total, what):
        deadline = time.time() + 600
        while time.time() < deadline:
            done = count_succeeded()
            if done >= total:
                return
            time.sleep(0.05)
        raise RuntimeError(f"{what}: {count_succeeded()} of {total} audit jobs succeeded")

    def open_store(self, store):
        """(instance process, its url, the Postgres or None, a count of succeeded jobs)."""
        pg = None
        if store == "postgresql":
            pg = self.pg = Postgres(os.path.join(self.tmp, "pg"))
            state = ["--state-url", pg.url]
            count = lambda: int(pg.sql(f"{POLL_MARK} SELECT count(*) FROM jobs "
                                       "WHERE status = 'succeeded'")[0][0])
        else:
            db = os.path.join(self.tmp, "state.db")
            state = ["--state-db", db]

            def count():
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
                    return c.execute("SELECT count(*) FROM jobs WHERE status = 'succeeded'"
                                     ).fetchone()[0]
        proc, url = self.instance(state)
        return proc, url, pg, count

    def run_stores(self, names):
        """Both stores' instances up at once, their rounds interleaved (each tool's round k on
        one store, then on the other, the order alternating), so that a change in the machine's
        load during the run falls on both alike."""
        self.pg = None
        stores = {}
        rows = {name: [] for name in names}
        self.audits_queued = {name: 0 for name in names}
        try:
            for name in names:
                stores[name] = self.open_store(name)
            for label, tool, args, n_key in RUNS:
                n = getattr(self.args, n_key)
                runs = {name: [] for name in names}
                # Warm-up calls of their own: {i} -> w{i}, r<round>-{i}, so that no key or url
                # is repeated.
                for name in names:
                    self.store = name
                    proc, url, pg, count = stores[name]
                    self.calls(url, tool, args.replace("{i}", "w{i}"), n // 10, count)
                for k in range(self.args.rounds):
                    for name in (names if k % 2 == 0 else names[::-1]):
                        self.store = name
                        proc, url, pg, count = stores[name]
                        runs[name].append(self.measure(name, proc, url, pg, count, label, tool,
                                                       args.replace("{i}", f"r{k}-{{i}}"), n))
                for name in names:
                    row = sorted(runs[name], key=lambda r: r["calls_per_s"])[len(runs[name]) // 2]
                    row["rounds_calls_per_s"] = [r["calls_per_s"] for r in runs[name]]
                    rows[name].append(row)
                    rt = row.get("round_trips_per_call")
                    log(f"{name:10} {label:36} {row['calls_per_s']:7.0f}/s (median of "
                        f"{len(runs[name])}) p50 {row['p50_ms']:.2f} p99 {row['p99_ms']:.2f} ms  "
                        "round trips/call "
                        + (f"{rt:.2f} (call {row['round_trips_in_call']:.2f})"
                           if rt is not None else "in-process"))
        finally:
            for proc, _, _, _ in stores.values():
                proc.terminate()
                proc.wait(timeout=10)
            if self.pg:
                self.pg.stop()
        return [row for name in names for row in rows[name]]

    def calls(self, url, tool, args, n, count):
        """n calls; for run_seo_audit, returns once their jobs have all succeeded too."""
        r = self.drive_args(url, tool, args, n, 0)
        if tool == "run_seo_audit":
            self.audits_queued[self.store] += n
            self.jobs_done(count, self.audits_queued[self.store], tool)
        return r

    def measure(self, store, proc, url, pg, count, label, tool, args, n):
        if pg:
            pg.reset()
        t0 = time.time()
        cpu0 = cpu_seconds(proc.pid)
        r = self.drive_args(url, tool, args, n, 0)
        cpu = (cpu_seconds(proc.pid) - cpu0) * 1000 / n
        row = {"store": store, "run": label, "tool": tool, "calls": n,
               "concurrency": self.args.concurrency, "calls_per_s": r["calls_per_s"],
               "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "instance_cpu_ms_per_call": cpu}
        if tool == "run_seo_audit":
            self.audits_queued[self.store] += n
            self.jobs_done(count, self.audits_queued[self.store], label)
            row["jobs_done_s"] = time.time() - t0
        if pg:
            row.update(self.round_trips(pg.statements(), n))
        return row

    @staticmethod
    def round_trips(stats, n):
        stmts = {q: c for q, (c, _) in stats.items()}
        total = sum(stmts.values())
        worker = sum(c for q, c in stmts.items() if JOB_WORKER.match(q))
        chores = sum(c for q, c in stmts.items() if HOUSEKEEPING.match(q))
        chores += 2 * sum(c for q, c in stmts.items() if TASK_RENEW.match(q))
        return {"round_trips_per_call": (total - chores) / n,
                "round_trips_in_call": (total - chores - worker) / n,
                "job_worker_per_call": worker / n, "housekeeping_statements": chores,
                "statements": {q: {"calls": c, "mean_exec_ms": ms} for q, (c, ms)
                               in sorted(stats.items(), key=lambda kv: -kv[1][0])}}


def machine():
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    field = lambda name: next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
                               if l.startswith(name + ":")), "?")
    pg = subprocess.run(["psql", "--version"], capture_output=True, text=True).stdout.strip()
    return {"cpu": field("Model name"), "cpus": field("CPU(s)"),
            "threads_per_core": field("Thread(s) per core"), "postgresql": pg,
            "sqlite": sqlite3.sqlite_version,
            "loadavg": open("/proc/loadavg").read().split()[:3],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def markdown(results):
    m = results["machine"]
    lines = ["## State stores", "",
             "<!-- Generated by `make bench-store` (bench/store.py); bench/results/store.json "
             "has every figure, each statement's count included. -->", "",
             f"`make bench-store`: agency-mcp over Streamable HTTP (2026-07-28 "
             f"`tools/call`s from bench's driver, `--transport modern`, "
             f"{results['concurrency']} calls in flight, a tenth more as warm-up; each run "
             f"{results['rounds']} times, the one with the median calls/s shown) on the "
             "standalone sample gateway, on two instances up at once: one on an SQLite file "
             "(`--state-db`), one on a throwaway PostgreSQL cluster on the same machine "
             "(`--state-url`; the two stores' rounds interleaved, so that a change in the "
             "machine's load falls on both alike; "
             "`scripts/pg-cluster.sh`: fsync and synchronous_commit off). The per-client "
             "generation limits are raised so that nothing is refused. Round trips are counted "
             "on PostgreSQL with `pg_stat_statements` (each statement the instance sent is one "
             "round trip, a call of one of the store's PL/pgSQL functions included: the "
             "statements inside it run on the server, in that one exchange; the instance's "
             "periodic lease renewals and orphan scans are left out); SQLite makes "
             "the same Store calls in-process, so it has none. Targets (issue 33): at most 2 "
             "round trips a `generate_article`, 3 with an `idempotency_key`; PostgreSQL's "
             "calls/s within 1.5x of SQLite's.", "",
             f"- machine: {m['cpu']}, {m['cpus']} CPUs ({m['threads_per_core']} thread(s) per "
             f"core), shared by the driver, the instance, PostgreSQL and the gateway; "
             f"{m['postgresql']}; SQLite {m['sqlite']} (Python's, for reference); binary "
             f"`{results['binary']}` ({results['build']}); load average at the start "
             f"{' '.join(m['loadavg'])} (other builds ran meanwhile: the figures are noisy); "
             f"{m['date']}", "",
             "| tool | store | calls | calls/s | each round's calls/s | p50 ms | p99 ms | "
             "instance CPU ms a call | round trips a call: in the call | with the background "
             "job |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        if "round_trips_per_call" in r:
            in_call = f"{r['round_trips_in_call']:.2f}"
            total = (f"{r['round_trips_per_call']:.2f}" if r["tool"] == "run_seo_audit"
                     else "(no job)")
        else:
            in_call, total = "in-process", "in-process"
        rounds = " / ".join(f"{v:,.0f}" for v in r["rounds_calls_per_s"])
        lines.append(f"| {r['run']} | {r['store']} | {r['calls']:,} | {r['calls_per_s']:,.0f} | "
                     f"{rounds} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                     f"{r['instance_cpu_ms_per_call']:.3f} | {in_call} | {total} |")
    sqlite = {r["run"]: r for r in results["rows"] if r["store"] == "sqlite"}
    lines += ["", "| tool | SQLite calls/s ÷ PostgreSQL calls/s |", "|---|---:|"]
    for r in results["rows"]:
        if r["store"] == "postgresql" and r["run"] in sqlite and r["calls_per_s"]:
            lines.append(f"| {r['run']} | "
                         f"{sqlite[r['run']]['calls_per_s'] / r['calls_per_s']:.2f}x |")
    notes = os.path.join(ROOT, "bench", "store-notes.md")
    if os.path.exists(notes):
        lines += ["", open(notes).read().rstrip()]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build-release"))
    ap.add_argument("--requests", type=int, default=3000,
                    help="calls of get_client and generate_article, each")
    ap.add_argument("--audits", type=int, default=300, help="run_seo_audit calls")
    ap.add_argument("-c", "--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5,
                    help="runs of each tool on each store; the one with the median calls/s is shown")
    ap.add_argument("--no-write", action="store_true",
                    help="do not write bench/results/store.* or docs/benchmarks.md")
    args = ap.parse_args()
    b = StoreBench(args)
    rows = []
    try:
        b.gateway_start()
        rows = b.run_stores(["sqlite", "postgresql"])
    finally:
        b.stop()
    cache = os.path.join(b.build, "CMakeCache.txt")
    build = next((l.split("=", 1)[1].strip() for l in open(cache)
                  if l.startswith("CMAKE_BUILD_TYPE:")), "?") if os.path.exists(cache) else "?"
    results = {"machine": machine(), "concurrency": args.concurrency, "rows": rows,
               "rounds": args.rounds,
               "binary": os.path.relpath(b.agency, ROOT), "build": build}
    if args.no_write:
        print(json.dumps(results, indent=1))
        return
    write_results("store", results, markdown(results), "State stores")
    log("bench/results/store.json, bench/results/store.md, docs/benchmarks.md (State stores)")


if __name__ == "__main__":
    main()
