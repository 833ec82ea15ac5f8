"""What the archive's and the image's tests check of a server they started (test_dist.sh,
test_image.sh), each as a command:

  mcp_checks.py free-port                a loopback port nothing listens on
  mcp_checks.py stdio-input              the lines to send: initialize, tools/list, list_clients
  mcp_checks.py stdio REPLIES_FILE       the replies answer all three (tools listed, rows read)
  mcp_checks.py http PORT                /readyz says ready and /mcp answers initialize
"""
import json
import socket
import sys
import time
import urllib.request

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "package-test", "version": "1"}}}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def stdio_input():
    for message in (INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "list_clients", "arguments": {}}}):
        print(json.dumps(message))


def stdio(path):
    replies = {m["id"]: m for m in map(json.loads, open(path)) if "id" in m}
    assert replies[1]["result"]["serverInfo"]["name"] == "agency-mcp", replies[1]
    names = {t["name"] for t in replies[2]["result"]["tools"]}
    assert {"list_clients", "list_keywords", "deploy_article"} <= names, names
    rows = replies[3]["result"]["structuredContent"]["rows"]
    assert rows and all("id" in r for r in rows), replies[3]
    print(f"stdio: {len(names)} tools, list_clients {len(rows)} rows")


def http(port):
    base = f"http://127.0.0.1:{port}"
    for _ in range(150):
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
                ready = json.load(r)
            break
        except OSError:
            time.sleep(0.1)
    else:
        sys.exit("no /readyz answer within 15 s")
    assert ready["status"] == "ready", ready
    request = urllib.request.Request(base + "/mcp", data=json.dumps(INITIALIZE).encode(),
                                     method="POST", headers={
                                         "Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=10) as r:
        text = r.read().decode()
    data = [line for line in text.splitlines() if line.startswith("data: ")] or [text]
    answer = json.loads(data[-1].removeprefix("data: "))
    assert answer["result"]["serverInfo"]["name"] == "agency-mcp", answer
    print("http: /readyz ready, initialize answered")


if __name__ == "__main__":
    {"free-port": free_port, "stdio-input": stdio_input, "stdio": lambda: stdio(sys.argv[2]),
     "http": lambda: http(sys.argv[2])}[sys.argv[1]]()
