#!/usr/bin/env python3
"""Every shell snippet in README.md, CONTRIBUTING.md and docs/*.md runs here, or says why it
cannot (issues 49 and 50, ctest docs.snippets). Python 3 standard library only.

Usage: run_snippets.py AGENCY_BINARY SOURCE_DIR
Prints one line per snippet (file:line, what was done, the result); exits 0 when all pass, 1 when
any fails.

A snippet is a fenced block whose language is sh, bash, shell or console (``` or ~~~, indented
or not). Each one is either run, or marked as not run here with the reason.

Markers. An HTML comment that ends on the line just above the fence (it may start on an earlier
line), invisible when the page is rendered:

  <!-- snippet: run[; OPTION]... -->            run it (the default for an unmarked snippet)
  <!-- snippet: example: WHY -->                not run here; WHY says what it needs
  <!-- snippet: covered-by TEST[, TEST]: WHY --> not run here: the ctest TEST runs these steps
                                                (TEST must exist in tests/; WHY says how)

Options of `run`, separated by `;` (so no `;` inside one; a WHY may hold any text):
  check budget N     when the block's first server is listening, call generate_article N+1
                     times over HTTP with the last key the block printed (a line amcp_...,
                     from keys add); the first N must run, the last be refused with reason
                     "budget" and limit N
  expect REGEX       what the block printed (stdout, stderr and its servers' logs) matches
                     REGEX (Python re, multiline); may be given more than once
  status N           the block must exit with status N (default 0)
  skip TEXT: WHY     commands holding TEXT are not run (each is counted, with WHY)

Blocks tagged `clients-test=...` in their info string (docs/clients.md) are covered by ctest
clients.client_docs, which runs them. A `<!-- snippet:` comment that is not just above a
snippet, a marker that does not parse, and a covered-by test that does not exist all fail.
So does a block to run (marked run, or unmarked) that uses sudo, systemctl, apt-get, make,
docker, podman, PostgreSQL's or HAProxy's tools, or a path under /etc, /usr, /var, /lib, /opt
or /run: it is not run (the test may run as root) and must be marked example or covered-by.

How a block runs: in a fresh temporary folder that is both HOME and the working folder, with
build/agency-mcp there (a link to AGENCY_BINARY; the README's lines) and agency-mcp on PATH,
the environment without any AGENCY_* or XDG_* variable (so the built-in sample gateway serves,
and default paths fall in the folder), stdin empty (`serve` over stdio ends at once), as one
`bash -euo pipefail` script. Before it runs:
- HOST:PORT with host 127.0.0.1, 0.0.0.0 or localhost becomes 127.0.0.1 and a free port (the
  same port for the same number within a block);
- a command that serves until stopped (`agency-mcp serve --http ...`, `agency-mcp
  sample-gateway ...`) is started in the background; the next command runs once it listens
  (`serve --http` without --listen gets a free port), and it is stopped when the block ends;
- console blocks: only the lines starting with "$ " are commands.
A command that fails is reported with its own file:line. A block has 40 s.
"""
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

LANGUAGES = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)(.*)$")
MARKER = re.compile(r"<!--\s*snippet:(.*?)-->", re.S)
SERVER = re.compile(r"^\s*(?:[A-Za-z_]\w*=\S*\s+)*\S*agency-mcp\s+"
                    r"(?:serve\b[^#]*\s--http\b|sample-gateway\b)")
HOST_PORT = re.compile(r"\b(?:127\.0\.0\.1|0\.0\.0\.0|localhost):(\d{2,5})\b")
# Never run, whatever the marker says (the test may run as root): a block using one of these
# must be marked example or covered-by.
SYSTEM = re.compile(r"(?:^|[\s;&|(`])(sudo|sudoedit|systemctl|apt-get|apt|dpkg|adduser|deluser|"
                    r"delgroup|useradd|chroot|docker|podman|make|cmake|pg_dump|pg_restore|psql|"
                    r"haproxy|socat|promtool)(?=\s|$)"
                    r"|(?:^|[\s='\"])(/(?:etc|usr|var|lib|opt|run)/[^\s'\"]*)", re.M)
BLOCK_SECONDS = 40

# Sourced as the first line of every block's script. Nothing here may fail under `set -e`
# except by an explicit return, so that the failing line reported is the snippet's own.
PRELUDE = r"""
__servers=()
__stop_servers() {
  local p
  for p in "${__servers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${__servers[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap __stop_servers EXIT
trap 'echo "snippet: exit status $? at $SNIPPET_FILE:$((LINENO + SNIPPET_OFFSET))" >&2' ERR
__background() {  # a command that serves until stopped: started, then waited for until it listens
  local log="$SNIPPET_WORK/server-${#__servers[@]}.log" pid url="" i
  AGENCY_HTTP_LISTEN="${AGENCY_HTTP_LISTEN:-127.0.0.1:0}" env "$@" </dev/null >"$log" 2>&1 &
  pid=$!
  __servers+=("$pid")
  local listening='s/.*(MCP over Streamable HTTP|sample gateway \(sample data[^)]*\)) at (http:[^ ]*).*/\2/p'
  for i in $(seq 1 400); do
    url=$(sed -nE "$listening" "$log" | head -1) || true
    [ -z "$url" ] || break
    if ! kill -0 "$pid" 2>/dev/null; then
      { echo "snippet: the server exited before it listened: $*"; cat "$log"; } >&2
      return 1
    fi
    sleep 0.05
  done
  if [ -z "$url" ]; then
    { echo "snippet: the server did not listen within 20 s: $*"; cat "$log"; } >&2
    return 1
  fi
  echo "$url" >>"$SNIPPET_WORK/servers"
  echo "snippet: serving in the background at $url: $*" >&2
  if [ -n "${SNIPPET_CHECK:-}" ]; then
    local check=$SNIPPET_CHECK
    SNIPPET_CHECK=""
    "$SNIPPET_PYTHON" "$SNIPPET_SELF" --check $check >&2 || return 1
  fi
  return 0
}
"""


class Snippet:
    def __init__(self, path, line, lang, info, lines, marker, marker_line):
        self.path, self.line, self.lang, self.info = path, line, lang, info
        self.lines, self.marker, self.marker_line = lines, marker, marker_line

    @property
    def where(self):
        return f"{self.path}:{self.line}"


def find_snippets(src):
    """Every shell snippet of README.md, CONTRIBUTING.md and docs/*.md, and the problems found
    while looking: markers that are not just above a snippet."""
    pages = ["README.md", "CONTRIBUTING.md"] + sorted("docs/" + n for n in os.listdir(os.path.join(src, "docs"))
                                   if n.endswith(".md"))
    snippets, problems = [], []
    for page in pages:
        with open(os.path.join(src, page), encoding="utf-8") as f:
            text = f.read().splitlines()
        used_markers = set()
        i = 0
        while i < len(text):
            m = FENCE.match(text[i])
            if not m:
                i += 1
                continue
            indent, fence, lang, info = len(m.group(1)), m.group(2), m.group(3), m.group(4)
            body, j = [], i + 1
            while j < len(text):
                close = re.match(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$",
                                 text[j])
                if close:
                    break
                line = text[j]
                body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
                j += 1
            if lang in LANGUAGES:
                marker, marker_line = marker_above(text, i)
                if marker is not None:
                    used_markers.add(marker_line)
                snippets.append(Snippet(page, i + 1, lang, info, body, marker, marker_line))
            i = j + 1
        for n, line in enumerate(text, 1):
            if "<!-- snippet:" in line and n not in used_markers:
                problems.append(f"{page}:{n}: a snippet marker that is not just above a "
                                "sh/bash/shell/console block")
    return snippets, problems


def marker_above(text, fence_index):
    """The marker comment ending on the line above the fence: (its text, its first line)."""
    k = fence_index - 1
    if k < 0 or not text[k].rstrip().endswith("-->"):
        return None, None
    start = k
    while start >= 0 and "<!--" not in text[start]:
        start -= 1
    if start < 0:
        return None, None
    m = MARKER.search("\n".join(text[start:k + 1]))
    if not m:
        return None, None
    return " ".join(m.group(1).split()), start + 1


def parse_marker(text):
    """{kind: run|example|covered-by, why, tests, checks, expects, status, skips}, or raises
    ValueError naming what is wrong."""
    text = text.strip()
    parts = [p.strip() for p in text.split(";")] if text.split(";")[0].strip() == "run" else [text]
    head, options = parts[0], [p for p in parts[1:] if p]
    spec = {"kind": None, "why": "", "tests": [], "checks": [], "expects": [], "status": 0,
            "skips": []}
    if head == "run":
        spec["kind"] = "run"
    elif head.startswith("example:"):
        spec["kind"], spec["why"] = "example", head[len("example:"):].strip()
    elif head.startswith("covered-by "):
        names, sep, why = head[len("covered-by "):].partition(":")
        spec["kind"], spec["why"] = "covered-by", why.strip()
        spec["tests"] = [n.strip() for n in names.split(",") if n.strip()]
        if not sep or not spec["tests"]:
            raise ValueError("covered-by needs TEST[, TEST]: WHY")
    else:
        raise ValueError(f"unknown marker '{head}' (run, example: WHY, covered-by TEST: WHY)")
    if spec["kind"] != "run" and not spec["why"]:
        raise ValueError(f"{spec['kind']} without a reason")
    if spec["kind"] != "run" and options:
        raise ValueError("options belong to run only")
    for option in options:
        word, _, rest = option.partition(" ")
        rest = rest.strip()
        if word == "check" and re.fullmatch(r"budget \d+", rest):
            spec["checks"].append(rest)
        elif word == "expect" and rest:
            re.compile(rest)
            spec["expects"].append(rest)
        elif word == "status" and rest.isdigit():
            spec["status"] = int(rest)
        elif word == "skip" and ":" in rest:
            what, _, why = rest.partition(":")
            spec["skips"].append((what.strip(), why.strip()))
        else:
            raise ValueError(f"unknown option '{option}' (check budget N, expect REGEX, "
                             "status N, skip TEXT: WHY)")
    if len(spec["checks"]) > 1:
        raise ValueError("one check per block")
    return spec


@functools.lru_cache(maxsize=None)
def test_sources(src):
    """The text of every CMakeLists.txt and every .cpp file under tests/, as (cmake, cpp)."""
    cmake, cpp = [], []
    for root, _, files in os.walk(os.path.join(src, "tests")):
        for n in files:
            if n == "CMakeLists.txt" or n.endswith(".cpp"):
                (cpp if n.endswith(".cpp") else cmake).append(read(os.path.join(root, n)))
    return "\n".join(cmake), "\n".join(cpp)


def test_exists(src, name):
    """Whether ctest would have a test of this name: add_test(NAME ...), a client suite
    (clients.X), or a GoogleTest case (Suite.Case)."""
    cmake, cpp = test_sources(src)
    if re.search(r"\bNAME\s+" + re.escape(name) + r"\b", cmake):
        return True
    if name.startswith("clients.") and re.search(
            r"agency_client_suite\(\s*" + re.escape(name[len("clients."):]) + r"\s", cmake):
        return True
    suite, _, case = name.partition(".")
    return bool(case) and re.search(
        r"\bTEST(?:_F|_P)?\(\s*" + re.escape(suite) + r"\s*,\s*" + re.escape(case) + r"\s*\)", cpp)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def commands(lines):
    """The block's commands as (first index, last index, text joined over continuations)."""
    out, i = [], 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        out.append((start, i, text))
        i += 1
    return out


def script_of(snippet, spec):
    """The block as the script runs it (one line per line of the block, so that line numbers
    carry over), and what was skipped."""
    lines = list(snippet.lines)
    if snippet.lang == "console":
        lines = [l[2:] if l.startswith("$ ") else "" for l in lines]
    ports = {}

    def port(m):
        ports.setdefault(m.group(1), free_port())
        return f"127.0.0.1:{ports[m.group(1)]}"

    lines = [HOST_PORT.sub(port, l) for l in lines]
    skipped = []
    for first, last, text in commands(lines):
        if text.lstrip().startswith("#"):
            continue
        why = next((w for what, w in spec["skips"] if what in text), None)
        if why is not None:
            skipped.append(why)
            for k in range(first, last + 1):
                lines[k] = ""
        elif SERVER.match(text):
            lines[first] = "__background " + lines[first].lstrip()
    return lines, skipped


def run_snippet(snippet, spec, binary, scratch):
    """Runs one block; returns (ok, the line to print, details to show on failure, the
    file:line of the failing command or else of the block)."""
    lines, skipped = script_of(snippet, spec)
    system = SYSTEM.search("\n".join(re.sub(r"(^|\s)#.*$", "", l) for l in lines))
    if system:
        return False, (f"run: FAILED, not run: it uses {system.group(1) or system.group(2)}, "
                       "which this test does not run (root, the system, a build, PostgreSQL, "
                       "HAProxy, containers): mark it example: WHY, or covered-by TEST: WHY"), \
            "", snippet.where
    home = tempfile.mkdtemp(prefix="snippet-", dir=scratch)
    work = os.path.join(home, ".snippet")
    os.makedirs(os.path.join(home, "build"))
    os.makedirs(work)
    os.symlink(binary, os.path.join(home, "build", "agency-mcp"))
    with open(os.path.join(work, "prelude.sh"), "w") as f:
        f.write(PRELUDE)
    with open(os.path.join(work, "block.sh"), "w") as f:
        f.write('source "$SNIPPET_WORK/prelude.sh"\n' + "\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENCY_", "XDG_"))}
    env.update(HOME=home, PATH=os.path.join(home, "build") + os.pathsep + env.get("PATH", ""),
               PWD=home, SNIPPET_WORK=work, SNIPPET_FILE=snippet.path,
               SNIPPET_OFFSET=str(snippet.line - 1),
               SNIPPET_PYTHON=sys.executable, SNIPPET_SELF=os.path.abspath(__file__),
               SNIPPET_CHECK=spec["checks"][0] if spec["checks"] else "")
    out_path, err_path = os.path.join(work, "stdout"), os.path.join(work, "stderr")
    started = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(["bash", "-euo", "pipefail", os.path.join(work, "block.sh")],
                                cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)
        try:
            status = proc.wait(timeout=BLOCK_SECONDS)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            stop_group(proc)
    took = time.monotonic() - started
    printed = {n: read(os.path.join(work, n)) for n in sorted(os.listdir(work))
               if n in ("stdout", "stderr") or n.startswith("server-")}
    everything = "\n".join(printed.values())
    problems, where = [], snippet.where
    if status is None:
        problems.append(f"still running after {BLOCK_SECONDS} s")
    elif status != spec["status"]:
        at = re.findall(r"snippet: exit status \d+ at (\S+:\d+)", printed["stderr"])
        where = at[-1] if at else where
        problems.append(f"exit status {status} at {where} (expected {spec['status']})")
    else:
        for pattern in spec["expects"]:
            if not re.search(pattern, everything, re.M):
                problems.append(f"nothing printed matches: {pattern}")
        if spec["checks"] and not os.path.exists(os.path.join(work, "checked")):
            problems.append(f"check {spec['checks'][0]} did not run (no server started)")
    notes = [f"{took:.1f} s"]
    if os.path.exists(os.path.join(work, "checked")):
        notes.append(read(os.path.join(work, "checked")).strip())
    if spec["expects"] and not problems:
        notes.append(f"{len(spec['expects'])} expect(s) matched")
    if skipped:
        notes.append(f"{len(skipped)} command(s) skipped: " + "; ".join(sorted(set(skipped))))
    details = ""
    if problems:
        details = "".join(f"    --- {n} (last 25 lines)\n" + indent(tail(t, 25))
                          for n, t in printed.items() if t.strip())
    shutil.rmtree(home, ignore_errors=True)
    result = "FAILED: " + "; ".join(problems) if problems else "ok"
    return not problems, f"run: {result} ({', '.join(notes)})", details, where


def stop_group(proc):
    """Ends what the block left running: its own process group (start_new_session)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=5)
            time.sleep(0.1)
        except subprocess.TimeoutExpired:
            pass


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def tail(text, n):
    return "\n".join(text.rstrip().splitlines()[-n:]) + "\n"


def indent(text):
    return "".join("      " + l + "\n" for l in text.splitlines())


# --- checks, run by the block's script (run_snippets.py --check NAME ARGS) -------------------

def mcp_call(url, key, tool, arguments, request_id):
    """One 2026-07-28 tools/call over HTTP with the key; returns the result."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    request = urllib.request.Request(url, json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool,
        "X-API-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            text = r.read().decode()
    except urllib.error.HTTPError as e:
        raise SystemExit(f"check: {tool}: HTTP {e.code}: {e.read().decode()[:300]}")
    data = [l[len("data: "):] for l in text.splitlines() if l.startswith("data: ")] or [text]
    answer = json.loads(data[-1])
    if "result" not in answer:
        raise SystemExit(f"check: {tool}: {json.dumps(answer)[:300]}")
    return answer["result"]


def refusal(result):
    """The error object of a refused tool call ({"reason": ...}), or None when it ran."""
    if not result.get("isError"):
        return None
    error = (result.get("structuredContent") or {}).get("error")
    for c in result.get("content", []):
        if error is None and c.get("type") == "text":
            try:
                error = json.loads(c["text"]).get("error")
            except (ValueError, AttributeError):
                pass
    return error or {"reason": "unknown", "message": json.dumps(result)[:300]}


def check_budget(limit):
    """A budget of LIMIT allows LIMIT generations to the key the block printed, then refuses."""
    work = os.environ["SNIPPET_WORK"]
    url = read(os.path.join(work, "servers")).split()[0]
    keys = re.findall(r"^amcp_\w+$", read(os.path.join(work, "stdout")), re.M)
    if not keys:
        raise SystemExit("check budget: the block printed no key (keys add) before the server")
    for n in range(1, limit + 2):
        result = mcp_call(url, keys[-1], "generate_article",
                          {"client_id": "demo-law", "keyword": f"snippet check {n}"}, n)
        error = refusal(result)
        print(f"check budget: generation {n}: " + (f"refused, {error}" if error else "ran"))
        if n <= limit and error:
            raise SystemExit(f"check budget: generation {n} of a budget of {limit} was refused")
        if n == limit + 1:
            budget = (error or {}).get("budget", {})
            if not error or error.get("reason") != "budget" or budget.get("limit") != limit:
                raise SystemExit(f"check budget: generation {n} past a budget of {limit} "
                                 f"was not refused with reason budget: {error}")
    with open(os.path.join(work, "checked"), "w") as f:
        f.write(f"check budget {limit}: {limit} generation(s) ran, the next was refused "
                f"with reason budget")


# --- main ------------------------------------------------------------------------------------

def main(binary, src):
    binary, src = os.path.abspath(binary), os.path.abspath(src)
    snippets, problems = find_snippets(src)
    failures = list(problems)
    for p in problems:
        print(f"{p}: FAILED")
    scratch = tempfile.mkdtemp(prefix="agency-snippets-")
    counts = {"run": 0, "example": 0, "covered-by": 0}
    try:
        for s in snippets:
            if "clients-test=" in s.info:
                spec = {"kind": "covered-by", "tests": ["clients.client_docs"],
                        "why": "tagged " + s.info.strip()}
            else:
                try:
                    spec = parse_marker(s.marker if s.marker is not None else "run")
                except (ValueError, re.error) as e:
                    print(f"{s.path}:{s.marker_line}: marker FAILED: {e}")
                    failures.append(s.where)
                    continue
            counts[spec["kind"]] += 1
            if spec["kind"] == "example":
                print(f"{s.where}: example, not run: {spec['why']}")
            elif spec["kind"] == "covered-by":
                missing = [t for t in spec["tests"] if not test_exists(src, t)]
                state = f"FAILED: no such test {', '.join(missing)}" if missing else "not run here"
                print(f"{s.where}: covered-by {', '.join(spec['tests'])}, {state}: {spec['why']}")
                if missing:
                    failures.append(s.where)
            else:
                ok, line, details, where = run_snippet(s, spec, binary, scratch)
                print(f"{s.where}: {line}", flush=True)
                if not ok:
                    print(details, end="")
                    failures.append(where)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(snippets)} snippet(s): {counts['run']} run, {counts['covered-by']} covered by "
          f"other tests, {counts['example']} example(s); {len(failures)} failure(s)")
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--check":
        if len(sys.argv) == 4 and sys.argv[2] == "budget" and sys.argv[3].isdigit():
            check_budget(int(sys.argv[3]))
            sys.exit(0)
        sys.exit(f"unknown check: {' '.join(sys.argv[2:])}")
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1], sys.argv[2]))
