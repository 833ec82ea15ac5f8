#!/usr/bin/env python3
"""Scale-out throughput (`make bench-scale`): stateless 2026-07-28 read calls through HAProxy
(deploy/haproxy.cfg, the shipped file) to three agency-mcp instances, beside one instance
(directly, and alone behind the same HAProxy), all on one standalone sample gateway.

Reads make no state-store round trip, so the instances use SQLite files of their own unless
--pg is given (a throwaway PostgreSQL cluster from scripts/pg-cluster.sh and --state-url; it
changes nothing for reads and is there to show it). The load comes from bench's driver
(agency_bench_driver --transport modern: C keep-alive connections, no session). Writes
bench/results/scale.json and bench/results/scale.md, and puts the latter into
docs/benchmarks.md as its "Scale-out" section (bench/run.py keeps it). Standard library only.

  python3 bench/scale.py [--build-dir build-release] [--requests 20000] [--concurrency 4 16]
                         [--rounds 5] [--pg]
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAPROXY_CFG = os.path.join(ROOT, "deploy", "haproxy.cfg")
INSTANCE_UNIT = os.path.join(ROOT, "deploy", "agency-mcp@.service")
TOOLS = {
    "get_client": '{"client_id":"demo-dental"}',
    "list_keywords": '{"client_id":"demo-plumbing","limit":100}',
}


def log(msg):
    print(f"[bench-scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    """utime + stime of a process, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def unit_http_environment():
    """The HTTP settings deploy/agency-mcp@.service gives an instance behind HAProxy
    (`Environment=AGENCY_HTTP_...=value`): the instances here run with them."""
    env = {}
    with open(INSTANCE_UNIT) as f:
        for line in f:
            m = re.match(r"Environment=(AGENCY_HTTP_[A-Z_]+)=(\S+)\s*$", line)
            if m:
                env[m.group(1)] = m.group(2)
    return env


def haproxy_counters(sock_path):
    """HAProxy's connections opened to the instances and requests sent on a kept one, summed
    over the servers of the `agency` backend (`show stat` on the runtime API)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock_path)
        s.sendall(b"show stat\n")
        text = b""
        while chunk := s.recv(65536):
            text += chunk
    head, *rows = text.decode().strip().splitlines()
    names = head.lstrip("# ").split(",")
    total = {"connect": 0, "reuse": 0}
    for row in rows:
        f = dict(zip(names, row.split(",")))
        if f.get("pxname") == "agency" and f.get("svname", "").startswith("agency"):
            for k in total:
                total[k] += int(f[k] or 0)
    return total


def wait_line(proc, pattern, what, timeout=20):
    """Reads proc's output until pattern matches; returns the match."""
    deadline = time.time() + timeout
    seen = ""
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        m = re.search(pattern, line)
        if m:
            return m
    raise RuntimeError(f"{what} did not start:\n{seen}")


class Deployment:
    def __init__(self, args):
        self.args = args
        self.build = os.path.join(ROOT, args.build_dir)
        self.agency = os.path.join(self.build, "agency-mcp")
        self.driver = os.path.join(self.build, "agency_bench_driver")
        for path in (self.agency, self.driver):
            if not os.access(path, os.X_OK):
                sys.exit(f"{path} is missing: build agency-mcp and agency_bench_driver first")
        if not shutil.which("haproxy"):
            sys.exit("haproxy is missing: scripts/install-test-deps.sh installs it")
        self.tmp = tempfile.mkdtemp(prefix="agency-bench-scale-")
        os.chmod(self.tmp, 0o711)  # a PostgreSQL cluster run as `postgres` lives below
        self.procs = []
        self.instances = []
        self.state_url = None
        self.pg_dir = None

    def spawn(self, argv, env=None):
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, **(env or {})})
        self.procs.append(proc)
        return proc

    def start(self):
        gw = self.spawn([self.agency, "--log-level", "warn", "sample-gateway", "--listen",
                         "127.0.0.1:0"])
        self.gateway_url = wait_line(gw, r"(http://127\.0\.0\.1:\d+/api)", "sample gateway").group(1)
        self.gateway = gw
        if self.args.pg:
            self.pg_dir = os.path.join(self.tmp, "pg")
            run = subprocess.run(["bash", os.path.join(ROOT, "scripts", "pg-cluster.sh"), "start",
                                  self.pg_dir], capture_output=True, text=True, timeout=60)
            if run.returncode != 0:
                raise RuntimeError(f"scripts/pg-cluster.sh start: {run.stderr}")
            self.state_url = run.stdout.strip().splitlines()[-1]
        for i in range(1, 4):
            state = (["--state-url", self.state_url] if self.state_url
                     else ["--state-db", os.path.join(self.tmp, f"state{i}.db")])
            proc = self.spawn([self.agency, "serve", "--http", "--listen", "127.0.0.1:0",
                               "--gateway-url", self.gateway_url, *state, "--rate-limit", "off"],
                              env={**unit_http_environment(),
                                   "AGENCY_SERVER_SECRET": "bench-scale-secret-0123456789abcdef"})
            url = wait_line(proc, r"MCP over Streamable HTTP at (http://\S+)", f"instance {i}").group(1)
            self.instances.append({"proc": proc, "url": url, "host": url.split("/")[2]})
        # Their logs are not read any more: drain them so that a full pipe never blocks them.
        for proc in self.procs:
            subprocess.Popen(["cat"], stdin=proc.stdout, stdout=subprocess.DEVNULL)

    def haproxy(self, hosts):
        """HAProxy with the shipped file, its servers at hosts (repeated to fill three)."""
        port = free_port()
        sock = os.path.join(self.tmp, f"haproxy-{port}.sock")
        env = {"AGENCY_LISTEN": f"127.0.0.1:{port}", "AGENCY_CHECK_MS": "1000",
               "AGENCY_STATS_SOCKET": sock}
        for k in range(3):
            env[f"AGENCY_{k + 1}"] = hosts[k % len(hosts)]
        proc = subprocess.Popen(["haproxy", "-db", "-f", HAPROXY_CFG], env={**os.environ, **env},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proc.stats_socket = sock
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return proc, url
            except OSError:
                time.sleep(0.05)
        proc.kill()
        raise RuntimeError("haproxy did not listen")

    def drive(self, url, tool, concurrency, requests):
        """One driver run; with a list of URLs, one driver per URL at once, the calls in
        flight and the calls split among them (calls/s summed, p50 the median and p99 the
        highest of theirs)."""
        urls = url if isinstance(url, list) else [url]
        shares = [concurrency // len(urls) + (k < concurrency % len(urls))
                  for k in range(len(urls))]
        procs = []
        for u, c in zip(urls, shares):
            n = requests * c // concurrency
            argv = [self.driver, "--transport", "modern", "--url", u, "--tool", tool,
                    "--args", TOOLS[tool], "-n", str(n), "--warmup", str(n // 10),
                    "-c", str(c), "--max-seconds", "300"]
            procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=400)
            if not out.strip():
                raise RuntimeError(f"driver: {err}")
            result = json.loads(out)
            if result["failed"]:
                raise RuntimeError(f"driver: {result['failed']} failed: {result['first_failure']}")
            results.append(result)
        if len(results) == 1:
            return results[0]
        total = sum(r["requests"] for r in results)
        return {"requests": total, "calls_per_s": sum(r["calls_per_s"] for r in results),
                "p50_ms": sorted(r["p50_ms"] for r in results)[len(results) // 2],
                "p99_ms": max(r["p99_ms"] for r in results),
                "driver_cpu_per_call_ms": sum(r["driver_cpu_per_call_ms"] * r["requests"]
                                              for r in results) / total}

    def measure(self, setup, url, instances, hp, tool, concurrency):
        pids = {"instances": [i["proc"].pid for i in instances], "gateway": [self.gateway.pid],
                "haproxy": [hp.pid] if hp else []}
        before = {k: sum(cpu_seconds(p) for p in v) for k, v in pids.items()}
        links = haproxy_counters(hp.stats_socket) if hp else None
        r = self.drive(url, tool, concurrency, self.args.requests)
        calls = int(r["requests"] * 1.1)
        cpu = {k: (sum(cpu_seconds(p) for p in v) - before[k]) * 1000 / calls
               for k, v in pids.items()}
        row = {"setup": setup, "tool": tool, "concurrency": concurrency,
               "calls_per_s": r["calls_per_s"], "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"],
               "cpu_ms_per_call": {**cpu, "driver": r["driver_cpu_per_call_ms"]}}
        if hp:
            after = haproxy_counters(hp.stats_socket)
            # Connections HAProxy opened to the instances during the run (the rest of the calls
            # went out on kept-alive ones).
            row["instance_connections"] = after["connect"] - links["connect"]
            row["calls"] = calls
        log(f"{setup:24} {tool:14} c={concurrency:3} {r['calls_per_s']:8.0f}/s "
            f"p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.2f} ms  cpu/call "
            + " ".join(f"{k} {v:.3f}" for k, v in row["cpu_ms_per_call"].items())
            + (f"  {row['instance_connections']} connections to instances" if hp else ""))
        return row

    def run(self):
        rows = []
        hp1, url1 = self.haproxy([self.instances[0]["host"]])
        hp3, url3 = self.haproxy([i["host"] for i in self.instances])
        try:
            time.sleep(1.5)  # the first health checks
            # "three instances, direct": one driver for each, the calls in flight split among
            # them, the baseline of three instances behind HAProxy.
            setups = [("one instance, direct", self.instances[0]["url"], self.instances[:1], None),
                      ("one instance, HAProxy", url1, self.instances[:1], hp1),
                      ("three instances, direct", [i["url"] for i in self.instances],
                       self.instances, None),
                      ("three instances, HAProxy", url3, self.instances, hp3)]
            baseline = {"one instance, HAProxy": "one instance, direct",
                        "three instances, direct": "one instance, direct",
                        "three instances, HAProxy": "three instances, direct"}
            for tool in TOOLS:
                for c in self.args.concurrency:
                    # Rounds alternate the setups, so that a change in the machine's other load
                    # falls on all of them; each figure is the median over the rounds.
                    runs = {setup: [] for setup, *_ in setups}
                    for _ in range(self.args.rounds):
                        for setup, url, insts, hp in setups:
                            runs[setup].append(self.measure(setup, url, insts, hp, tool, c))
                    for setup, *_ in setups:
                        row = median_row(runs[setup])
                        if setup in baseline:
                            direct = runs[baseline[setup]]
                            # Each round's ratio to the direct run next to it, then the median:
                            # steadier than a ratio of medians while the machine's load moves.
                            cpu = lambda r: r["cpu_ms_per_call"]["instances"]
                            row["instance_cpu_vs_direct"] = sorted(
                                cpu(r) / cpu(d) for r, d in zip(runs[setup], direct)
                            )[len(direct) // 2]
                        rows.append(row)
        finally:
            for p in (hp1, hp3):
                p.terminate()
                p.wait()
        return rows

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.pg_dir:
            subprocess.run(["bash", os.path.join(ROOT, "scripts", "pg-cluster.sh"), "stop",
                            self.pg_dir], capture_output=True, timeout=60)
        shutil.rmtree(self.tmp, ignore_errors=True)


def median_row(runs):
    """One row from several runs of a setup: the median of every figure (connections: the sum)."""
    med = lambda values: sorted(values)[len(values) // 2]
    row = dict(runs[0])
    for k in ("calls_per_s", "p50_ms", "p99_ms"):
        row[k] = med([r[k] for r in runs])
    row["cpu_ms_per_call"] = {k: med([r["cpu_ms_per_call"][k] for r in runs])
                              for k in runs[0]["cpu_ms_per_call"]}
    if "instance_connections" in row:
        row["instance_connections"] = sum(r["instance_connections"] for r in runs)
        row["calls"] = sum(r["calls"] for r in runs)
    row["rounds"] = len(runs)
    return row


def machine():
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    field = lambda name: next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
                               if l.startswith(name + ":")), "?")
    return {"cpu": field("Model name"), "cpus": field("CPU(s)"),
            "threads_per_core": field("Thread(s) per core"),
            "haproxy": subprocess.run(["haproxy", "-v"], capture_output=True,
                                      text=True).stdout.split(" - ")[0].replace(" version", ""),
            "loadavg": open("/proc/loadavg").read().split()[:3],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def cpu_ratios(rows):
    """'get_client, 16 in flight: 1.08× (one instance), 1.21× (three)' for each tool and load:
    the instances' CPU a call through HAProxy over that of the same instances called directly;
    then three instances called directly over one."""
    out = []
    for tool in dict.fromkeys(r["tool"] for r in rows):
        for c in dict.fromkeys(r["concurrency"] for r in rows):
            at = {r["setup"]: r.get("instance_cpu_vs_direct") for r in rows
                  if r["tool"] == tool and r["concurrency"] == c}
            if "one instance, direct" not in at:
                continue
            parts = [f"{at[s]:.2f}× ({name})" for s, name in
                     (("one instance, HAProxy", "one instance"),
                      ("three instances, HAProxy", "three instances"),
                      ("three instances, direct", "three instances called directly, against one"))
                     if at.get(s)]
            out.append(f"{tool}, {c} in flight: " + ", ".join(parts))
    return out


def markdown(results):
    m = results["machine"]
    lines = ["## Scale-out", "",
             "<!-- Generated by `make bench-scale` (bench/scale.py); bench/results/scale.json "
             "has every figure. -->", "",
             f"`make bench-scale`: stateless 2026-07-28 `tools/call`s (bench's driver, "
             f"`--transport modern`, {results['requests']:,} calls after a tenth as warm-up, "
             f"keep-alive connections; {results['rounds']} rounds alternating the setups, the "
             "median of each figure) to one agency-mcp instance directly, to the same instance "
             "alone behind HAProxy, and to three instances behind HAProxy (`deploy/haproxy.cfg` "
             "as shipped: leastconn, connections to the instances kept alive and reused by every "
             "client's requests, `http-reuse always`; the instances with the HTTP settings of "
             "`deploy/agency-mcp@.service`), beside the three instances called directly (one "
             "driver each, the calls in flight split among them: calls/s summed, p50 the median "
             "and p99 the highest of the three), all on one "
             f"standalone sample gateway; state: {results['state']} (a read makes no store "
             "round trip). \"Connections to instances\": those HAProxy opened during the run "
             "(its `connect` counter; every other call went out on a kept one).", "",
             f"- machine: {m['cpu']}, {m['cpus']} CPUs ({m['threads_per_core']} thread(s) per "
             f"core), shared by the driver, HAProxy, the instances and the gateway; "
             f"{m['haproxy']}; binary `{results['binary']}`; load average at the start "
             f"{' '.join(m['loadavg'])} (other builds ran meanwhile: the figures are noisy); "
             f"{m['date']}",
             "", "| tool | calls in flight | setup | calls/s | p50 ms | p99 ms | CPU ms a call: "
             "instances | HAProxy | gateway | driver | connections to instances |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        c = r["cpu_ms_per_call"]
        links = (f"{r['instance_connections']:,} for {r['calls']:,} calls"
                 if "instance_connections" in r else "")
        lines.append(f"| {r['tool']} | {r['concurrency']} | {r['setup']} | "
                     f"{r['calls_per_s']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                     f"{c['instances']:.3f} | {c['haproxy']:.3f} | {c['gateway']:.3f} | "
                     f"{c['driver']:.3f} | {links} |")
    lines += ["", "The instances' CPU a call through HAProxy against the same calls sent straight "
              "to the same instances (target: within 1.3×; the median over the rounds of each "
              "round's ratio): " + "; ".join(cpu_ratios(results["rows"])) + "."]
    explanation = os.path.join(ROOT, "bench", "scale-notes.md")
    if os.path.exists(explanation):
        lines += ["", open(explanation).read().rstrip()]
    return "\n".join(lines) + "\n"


def splice(doc_path, section, heading="Scale-out"):
    """Replaces the '## <heading>' section of docs/benchmarks.md (or adds it before the
    profile findings)."""
    with open(doc_path) as f:
        doc = f.read()
    pattern = re.compile(r"^## " + re.escape(heading) + r"\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(doc):
        doc = pattern.sub(lambda _: section + "\n", doc, count=1)
    else:
        anchor = "## What the profiles showed"
        at = doc.find("\n" + anchor)
        doc = doc[:at + 1] + section + "\n" + doc[at + 1:] if at >= 0 else doc + "\n" + section
    with open(doc_path, "w") as f:
        f.write(doc)


def write_results(name, results, section, heading):
    """bench/results/<name>.json and <name>.md, and `section` as the '## <heading>' section of
    docs/benchmarks.md."""
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(section)
    splice(os.path.join(ROOT, "docs", "benchmarks.md"), section, heading)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.environ.get("BUILD_DIR", "build-release"))
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[4, 16])
    ap.add_argument("--rounds", type=int, default=5,
                    help="runs of each setup, alternated; the table shows medians")
    ap.add_argument("--pg", action="store_true",
                    help="a throwaway PostgreSQL cluster as the shared store (--state-url)")
    ap.add_argument("--no-write", action="store_true",
                    help="do not write bench/results/scale.* or docs/benchmarks.md")
    args = ap.parse_args()
    d = Deployment(args)
    try:
        d.start()
        rows = d.run()
    finally:
        d.stop()
    results = {"machine": machine(), "requests": args.requests, "rounds": args.rounds,
               "rows": rows,
               "state": "PostgreSQL (one cluster)" if args.pg else "an SQLite file per instance",
               "binary": os.path.relpath(d.agency, ROOT)}
    if args.no_write:
        print(json.dumps(results, indent=1))
        return
    write_results("scale", results, markdown(results), "Scale-out")
    log("bench/results/scale.json, bench/results/scale.md, docs/benchmarks.md (Scale-out)")


if __name__ == "__main__":
    main()
