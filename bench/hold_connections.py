#!/usr/bin/env python3
"""Connection pressure (issue 15): agency-mcp over HTTP with 1,000 idle keep-alive connections
and 200 open SSE streams held, while a normal client calls a tool.

Starts build/agency-mcp (sample gateway, a fresh state database), measures a modern
tools/call (list_clients) on a keep-alive connection, then holds the idle connections (from
127.0.0.2-5, under the per-address bound) and 200 legacy deploy_article calls waiting on the
client's confirmation (streams left open, never answered), and measures again. Prints the
latencies and the server's resident memory at each step; exits 1 if a call failed or the held
connections were refused.

    bench/hold_connections.py [path/to/agency-mcp] [--idle N] [--streams N] [--calls N]
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def threads_of(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def connect(port, source="127.0.0.1"):
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def request(port, body, headers):
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    head += "Accept: application/json, text/event-stream\r\n"
    for k, v in headers.items():
        head += f"{k}: {v}\r\n"
    data = body.encode()
    head += f"Content-Length: {len(data)}\r\n\r\n"
    return head.encode() + data


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def until(self, marker):
        while marker not in self.buf:
            self.fill()
        at = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:at], self.buf[at:]
        return out

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    # One whole answer: (status, headers, body). A chunked body is read to its end.
    def answer(self):
        head = self.until(b"\r\n\r\n").decode("latin-1")
        lines = head.split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            return status, headers, self.take(int(headers["content-length"]))
        body = b""
        while True:
            size = int(self.until(b"\r\n").strip(), 16)
            if size == 0:
                self.until(b"\r\n")
                return status, headers, body
            body += self.take(size)
            self.take(2)


def call_tool_modern(sock, reader, port, rid):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "list_clients", "arguments": {"limit": 3},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    sock.sendall(request(port, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                                      "Mcp-Name": "list_clients"}))
    status, _, payload = reader.answer()
    if status != 200 or b'"result"' not in payload:
        raise RuntimeError(f"tools/call answered {status}: {payload[:200]!r}")


def measure(port, calls):
    sock = connect(port)
    reader = Reader(sock)
    times = []
    for i in range(calls):
        started = time.perf_counter()
        call_tool_modern(sock, reader, port, i)
        times.append((time.perf_counter() - started) * 1000)
    sock.close()
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]


def open_session(port):
    sock = connect(port)
    reader = Reader(sock)
    sock.sendall(request(port, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "hold-bench", "version": "1"}}}), {}))
    status, headers, _ = reader.answer()
    if status != 200:
        raise RuntimeError(f"initialize answered {status}")
    sid = headers["mcp-session-id"]
    sock.sendall(request(port, '{"jsonrpc":"2.0","method":"notifications/initialized"}',
                         {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}))
    reader.answer()
    return sid, sock, reader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary", nargs="?", default="build/agency-mcp")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--markdown", help="also write the figures as a docs/benchmarks.md section")
    args = parser.parse_args()

    port = free_port()
    state = tempfile.mkdtemp(prefix="agency-hold-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENCY_")}
    server = subprocess.Popen(
        [args.binary, "--log-level", "error", "serve", "--http", "--listen", f"127.0.0.1:{port}",
         "--state-db", os.path.join(state, "state.db"), "--rate-limit", "off",
         "--max-waiting-on-clients", str(max(64, args.streams + 16)),
         "--http-max-streams", str(max(256, args.streams + 16))],
        env=env)
    held = []
    failed = False
    try:
        deadline = time.time() + 30
        while True:
            try:
                connect(port).close()
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("the server did not start")
                time.sleep(0.05)

        measure(port, 50)  # warm up
        base_p50, base_p99 = measure(port, args.calls)
        base_rss = rss_mb(server.pid)
        print(f"baseline: tools/call p50 {base_p50:.2f} ms, p99 {base_p99:.2f} ms; "
              f"server RSS {base_rss:.1f} MB, {threads_of(server.pid)} threads")

        sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
        for i in range(args.idle):
            held.append(connect(port, sources[i % len(sources)]))
        # A refused connection is closed by the server: none may be.
        time.sleep(0.5)
        refused = 0
        for s in held:
            s.setblocking(False)
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    refused += 1
            except BlockingIOError:
                pass
            s.setblocking(True)
        print(f"{args.idle} idle connections held ({refused} refused)")
        failed |= refused > 0

        # Streams: legacy deploy_article calls waiting on a confirmation nobody gives, 10
        # per session (under the per-session bound).
        sid, sock, reader = open_session(port)
        sock.sendall(request(port, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "list_articles", "arguments": {"client_id": "demo-plumbing", "limit": 1}}}),
            {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}))
        _, _, payload = reader.answer()
        article_id = json.loads(payload)["result"]["structuredContent"]["rows"][0]["id"]
        sessions = []
        opened = 0
        for i in range(args.streams):
            if i % 10 == 0:
                sessions.append(open_session(port)[0])
            s = connect(port)
            s.sendall(request(port, json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
                "name": "deploy_article",
                "arguments": {"client_id": "demo-plumbing", "article_id": article_id}}}),
                {"Mcp-Session-Id": sessions[-1], "MCP-Protocol-Version": LEGACY}))
            r = Reader(s)
            s.settimeout(10)
            r.until(b"elicitation/create")
            held.append(s)
            opened += 1
        print(f"{opened} SSE streams open, each waiting on an elicitation")

        time.sleep(0.5)
        held_p50, held_p99 = measure(port, args.calls)
        held_rss = rss_mb(server.pid)
        held_threads = threads_of(server.pid)
        print(f"held: tools/call p50 {held_p50:.2f} ms, p99 {held_p99:.2f} ms; "
              f"server RSS {held_rss:.1f} MB (+{held_rss - base_rss:.1f}), "
              f"{held_threads} threads")
        if args.markdown:
            with open(args.markdown, "w") as out:
                out.write("\n".join([
                    "## Held connections",
                    "",
                    f"`bench/hold_connections.py` (run by `make bench`): a modern `tools/call` "
                    f"(`list_clients`, {args.calls} calls on one keep-alive connection) alone, then "
                    f"with {args.idle:,} idle keep-alive connections and {opened} open SSE streams "
                    f"held (legacy `deploy_article` calls waiting on a confirmation nobody gives). "
                    f"Idle connections wait in epoll and hold no thread (docs/design.md, Concurrency).",
                    "",
                    "| | p50 ms | p99 ms | server RSS MB | refused |",
                    "|---|---:|---:|---:|---:|",
                    f"| alone | {base_p50:.2f} | {base_p99:.2f} | {base_rss:.1f} | – |",
                    f"| {args.idle:,} idle + {opened} streams held | {held_p50:.2f} | {held_p99:.2f} "
                    f"| {held_rss:.1f} | {refused} |",
                    "",
                    f"{held_threads} threads while held: two per open stream (its call, waiting on "
                    f"the client, and the thread relaying the stream), none per idle connection. Binary `{args.binary}`; "
                    f"CPU {cpu_model()}; load average {open('/proc/loadavg').read().split()[0]} "
                    f"at the end.",
                ]) + "\n")
    except Exception as e:  # noqa: BLE001 - report and fail
        print(f"FAILED: {e}", file=sys.stderr)
        failed = True
    finally:
        for s in held:
            s.close()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
