#!/usr/bin/env python3
"""Offboarding under every shipped systemd unit (ctest deploy.unit_keys; issue 49).

Each unit is run as systemd would run it, without systemd: a clean environment with the unit's
Environment= lines and its EnvironmentFile (as the docs say to write it), each LoadCredential=
copied into a credentials folder as the service starts (%d, $CREDENTIALS_DIRECTORY), and its
ExecStart with %i, %d and $VARIABLES expanded; /etc/agency-mcp and /var/lib/agency-mcp are
folders of a scratch root. Then, as an operator offboards someone:
- the key works, `keys remove` prints what a running server does with it, and within 5 s the
  removed key is refused (401) while another still works;
- the server's start line says the file is followed.
A unit that passes the keys as a credential (a copy made at start, the layout before issue 49)
is run too: its start line must say a removal applies only after a restart, and so it does.

Usage: unit_keys.py AGENCY_BINARY SOURCE_DIR
"""
import http.client
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BINARY, SRC = sys.argv[1], sys.argv[2]
failures = []


def fail(what):
    print("FAIL: " + what)
    failures.append(what)


def service_lines(text):
    """The [Service] section's KEY=value lines, continuations joined, in order."""
    out, section, pending = [], None, ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.append((key, value))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def initialize(port, key):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "offboarding", "version": "1"}}})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream",
                                        "X-API-Key": key})
    status = conn.getresponse().status
    conn.close()
    return status


def run_unit(name, text, env_file_lines, instance):
    print(f"== {name}")
    root = tempfile.mkdtemp(prefix="agency-unit-keys-")
    etc, var, creds = f"{root}/etc/agency-mcp", f"{root}/var/lib/agency-mcp", f"{root}/credentials"
    for d in (etc, var, creds):
        os.makedirs(d)
    port = free_port()

    def mapped(value):
        value = value.replace("%i", instance or "").replace("%d", creds)
        value = value.replace("/etc/agency-mcp", etc).replace("/var/lib/agency-mcp", var)
        return re.sub(r"/usr(/local)?/bin/agency-mcp", BINARY, value)

    keys = f"{etc}/keys"
    cli_env = {"PATH": os.environ["PATH"], "HOME": root}

    def keys_cmd(*args):
        return subprocess.run([BINARY, "keys", *args, "--keys-file", keys], env=cli_env,
                              capture_output=True, text=True, check=True)

    alice = keys_cmd("add", "--name", "alice").stdout.strip()
    bob = keys_cmd("add", "--name", "bob").stdout.strip()
    with open(f"{etc}/gateway-key", "w") as f:
        f.write("gateway-key-for-the-test")

    env = {"PATH": os.environ["PATH"], "HOME": var, "CREDENTIALS_DIRECTORY": creds}
    exec_start = None
    for key, value in service_lines(text):
        if key == "Environment":
            for word in shlex.split(value):
                var_name, _, val = word.partition("=")
                env[var_name] = mapped(val)
        elif key == "EnvironmentFile":
            for line in env_file_lines:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    var_name, val = line.split("=", 1)
                    env[var_name] = mapped(val)
        elif key == "LoadCredential":
            cred, path = value.split(":", 1)
            shutil.copy(mapped(path), f"{creds}/{cred}")  # what systemd does at start
        elif key == "ExecStart":
            exec_start = value
    env["AGENCY_HTTP_LISTEN"] = f"127.0.0.1:{port}"  # the packaged unit's default, moved
    argv = []
    for word in shlex.split(mapped(exec_start.lstrip("-+@!"))):
        if re.fullmatch(r"\$\{?(\w+)\}?", word):  # systemd splits $VAR into words
            argv += env.get(re.sub(r"\W", "", word), "").split()
        else:
            argv.append(word)
    argv = [f"127.0.0.1:{port}" if a.startswith("127.0.0.1:") else a for a in argv]
    if "--state-db" not in argv and "AGENCY_STATE_DB" not in env:
        argv += ["--state-db", f"{var}/state.db"]  # the instances' shared store, as a file

    log = open(f"{root}/stderr.txt", "w+")
    server = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=log)
    try:
        started = ""
        for _ in range(200):
            log.seek(0)
            started = log.read()
            if "MCP over Streamable HTTP at" in started or server.poll() is not None:
                break
            time.sleep(0.05)
        if "MCP over Streamable HTTP at" not in started:
            fail(f"{name}: did not start: {' '.join(argv)}\n{started}")
            return None
        if initialize(port, bob) != 200:
            fail(f"{name}: the key was refused before its removal")
        removed = keys_cmd("remove", "--name", "bob").stderr
        print("  keys remove says: " + removed.strip())
        t0 = time.monotonic()
        status = initialize(port, bob)
        while status != 401 and time.monotonic() - t0 < 5:
            time.sleep(0.1)
            status = initialize(port, bob)
        took = time.monotonic() - t0
        log.seek(0)
        said = log.read()
        line = next((l for l in said.splitlines() if "HTTP callers need a key" in l), "")
        print(f"  start line: {line.split(' ', 2)[-1][:160]}")
        print(f"  the removed key: {status} after {took:.1f} s; the other key: "
              f"{initialize(port, alice)}")
        if initialize(port, alice) != 200:
            fail(f"{name}: the key that was not removed stopped working")
        if "from its next request" not in removed:
            fail(f"{name}: keys remove does not say when a running server applies it")
        return status == 401, took, line
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def read(path):
    with open(os.path.join(SRC, path)) as f:
        return f.read()


# The environment files as the docs have the operator write them.
manual_env = ["AGENCY_SERVE_ARGS="]  # docs/deploy.md: AGENCY_GATEWAY_URL (the sample here)
cluster_env = ["AGENCY_SERVER_SECRET=" + "s" * 64, "AGENCY_SERVE_ARGS="]
packaged_env = read("deploy/debian/agency-mcp.env").splitlines() + [
    "AGENCY_KEYS_FILE=/etc/agency-mcp/keys"]  # docs/operations.md, "Keys under the package"

for unit, env_lines, instance in [("deploy/agency-mcp.service", manual_env, None),
                                  ("deploy/agency-mcp@.service", cluster_env, "8701"),
                                  ("deploy/debian/agency-mcp.service", packaged_env, None)]:
    text = read(unit)
    if "LoadCredential=keys" in text:
        fail(f"{unit} passes the keys file as a credential (a copy made at start)")
    result = run_unit(unit, text, env_lines, instance)
    if result is None:
        continue
    refused, took, line = result
    if not refused:
        fail(f"{unit}: the removed key still works {took:.1f} s after keys remove")
    if "the file is followed" not in line:
        fail(f"{unit}: the start line does not say the keys file is followed: {line}")

# A unit of one's own that passes the keys as a credential: the server says a removal waits for
# a restart, and that is what happens.
copy_unit = read("deploy/agency-mcp.service").replace(
    "Environment=AGENCY_KEYS_FILE=/etc/agency-mcp/keys",
    "LoadCredential=keys:/etc/agency-mcp/keys\nEnvironment=AGENCY_KEYS_FILE=%d/keys")
result = run_unit("a unit with the keys as a credential", copy_unit, manual_env, None)
if result is not None:
    refused, took, line = result
    if "applies only after a restart" not in line:
        fail(f"a credential copy of the keys: the start line does not say so: {line}")
    if refused:
        fail("a credential copy refused a removed key: the start line's warning is untrue")

print("FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
