#!/usr/bin/env bash
# The shipped dashboard and alerts (issue 49), checked without a Prometheus or a Grafana:
# - deploy/prometheus-alerts.yml passes `promtool check rules` (lint errors fatal);
# - deploy/prometheus-alerts.test.yml passes `promtool test rules`, and has for every alert at
#   least one case where it fires and one where it stays quiet;
# - deploy/grafana-dashboard.json is JSON with schemaVersion 39, the DS_PROMETHEUS input, the
#   `instance` variable from label_values(agency_build_info, instance), every panel and target
#   on ${DS_PROMETHEUS}, panel ids unique, and every target's expr valid PromQL (each is written
#   as a recording rule into a temporary file that `promtool check rules` parses);
# - every metric the dashboard and the alerts name is in the metrics table of
#   docs/operations.md ("`/metrics`"; `up` too for the alerts), and the alerts table of
#   "Dashboard and alerts" there names exactly the alerts of the rules file.
# Usage: check_monitoring.sh [REPO_ROOT] (default: this script's ../..). Exits 77 (skipped)
# without promtool (apt-get install prometheus) or python3.
set -euo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

command -v promtool >/dev/null || { echo "SKIPPED: no promtool (apt-get install prometheus)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

alerts=$src/deploy/prometheus-alerts.yml
tests=$src/deploy/prometheus-alerts.test.yml
dashboard=$src/deploy/grafana-dashboard.json
docs=$src/docs/operations.md

echo "== promtool check rules deploy/prometheus-alerts.yml"
promtool check rules --lint-fatal "$alerts" || bad "promtool check rules deploy/prometheus-alerts.yml"

echo "== promtool test rules deploy/prometheus-alerts.test.yml"
promtool test rules "$tests" || bad "promtool test rules deploy/prometheus-alerts.test.yml"

echo "== the dashboard's structure, its expressions as recording rules, the metric names"
python3 - "$alerts" "$tests" "$dashboard" "$docs" "$work/dashboard-rules.yml" <<'EOF' || fail=1
import json, re, sys

alerts_path, tests_path, dashboard_path, docs_path, rules_out = sys.argv[1:]
failed = False


def bad(msg):
    global failed
    failed = True
    print("FAIL: " + msg)


# --- The rules file, read line by line (no YAML module needed): each alert's name and expr.
def rule_exprs(path):
    """[(alert name, expr)] of a rules file written as deploy/prometheus-alerts.yml is."""
    lines = open(path).read().split("\n")
    out, name, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*- (?:alert|record): (\S+)", line)
        if m:
            name = m.group(1)
        m = re.match(r"^(\s*)expr: ?(.*)$", line)
        if m:
            indent, rest = len(m.group(1)), m.group(2).strip()
            if rest in (">-", ">", "|", "|-"):
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                out.append((name, " ".join(b for b in body if b)))
                continue
            out.append((name, rest.strip("'\"")))
        i += 1
    return out


alert_exprs = rule_exprs(alerts_path)
alert_names = sorted({n for n, _ in alert_exprs})
print("alerts: " + ", ".join(alert_names))
if not alert_exprs:
    bad("no alert expressions found in " + alerts_path)

# --- Every alert has a firing case and a quiet case in the test file.
cases = {}
current = None
for line in open(tests_path):
    m = re.match(r"^\s*alertname: (\S+)", line)
    if m:
        current = m.group(1)
        continue
    m = re.match(r"^\s*exp_alerts:\s*(\[\])?\s*(#.*)?$", line)
    if m and current:
        cases.setdefault(current, set()).add("quiet" if m.group(1) else "fires")
        current = None
for name in alert_names:
    have = cases.get(name, set())
    for kind in ("fires", "quiet"):
        if kind not in have:
            bad(f"prometheus-alerts.test.yml: no case where {name} {kind}")
for name in sorted(set(cases) - set(alert_names)):
    bad(f"prometheus-alerts.test.yml tests {name}, which the rules file does not have")

# --- The dashboard.
try:
    dash = json.load(open(dashboard_path))
except ValueError as e:
    bad(f"grafana-dashboard.json is not JSON: {e}")
    sys.exit(1)
DS = "${DS_PROMETHEUS}"
if dash.get("schemaVersion") != 39:
    bad(f"grafana-dashboard.json: schemaVersion {dash.get('schemaVersion')}, not 39")
inputs = [i for i in dash.get("__inputs", []) if i.get("name") == "DS_PROMETHEUS"]
if not inputs or inputs[0].get("pluginId") != "prometheus" or inputs[0].get("type") != "datasource":
    bad("grafana-dashboard.json: no __inputs entry DS_PROMETHEUS (a prometheus datasource)")
variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
instance = variables.get("instance")
query = instance and instance.get("query")
query = query.get("query") if isinstance(query, dict) else query
if not instance or query != "label_values(agency_build_info, instance)":
    bad("grafana-dashboard.json: no variable `instance` from label_values(agency_build_info, instance)")
elif (instance.get("datasource") or {}).get("uid") != DS:
    bad("grafana-dashboard.json: the `instance` variable is not on " + DS)

panels = []
def walk(ps):
    for p in ps:
        panels.append(p)
        walk(p.get("panels", []))
walk(dash.get("panels", []))
ids = [p.get("id") for p in panels]
for dup in sorted({i for i in ids if ids.count(i) > 1}, key=str):
    bad(f"grafana-dashboard.json: panel id {dup} is used twice")

dash_exprs = []
for p in panels:
    if p.get("type") == "row":
        continue
    title = p.get("title", "?")
    if (p.get("datasource") or {}).get("uid") != DS:
        bad(f"panel {title!r}: datasource is not {DS}")
    if not p.get("targets"):
        bad(f"panel {title!r}: no targets")
    for t in p.get("targets", []):
        if (t.get("datasource") or {}).get("uid") != DS:
            bad(f"panel {title!r} target {t.get('refId')}: datasource is not {DS}")
        if not t.get("expr", "").strip():
            bad(f"panel {title!r} target {t.get('refId')}: no expr")
            continue
        dash_exprs.append((f"{title!r} (id {p.get('id')}, {t.get('refId')})", t["expr"],
                           f"dashboard:panel_{p.get('id')}_{t.get('refId')}"))
print(f"dashboard: {len(panels)} panels, {len(dash_exprs)} expressions")

# Grafana's variables become what Grafana would put there, so that promtool can parse them.
def grafana_to_promql(expr):
    durations = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
    return re.sub(r"\$\{?(\w+)\}?", lambda m: durations.get(m.group(1), "x"), expr)

rules = {"groups": [{"name": "dashboard", "rules": [
    {"record": record, "expr": grafana_to_promql(e)} for _, e, record in dash_exprs]}]}
with open(rules_out, "w") as f:
    json.dump(rules, f, indent=1)   # JSON is YAML: promtool reads it

# --- Metric names against docs/operations.md's table.
docs = open(docs_path).read()
start = docs.find("### `/metrics`")
end = docs.find("\n### ", start + 1)
section = docs[start:end] if start >= 0 else ""
documented, histograms = set(), set()
for line in section.split("\n"):
    if not line.startswith("| ") or line.startswith("| metric ") or line.startswith("|---"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    names = re.findall(r"`([a-zA-Z_:][a-zA-Z0-9_:]*)`", cells[0])
    documented.update(names)
    if len(cells) > 1 and cells[1].startswith("histogram"):
        histograms.update(names)
if not documented:
    bad("docs/operations.md: no metrics table found under ### `/metrics`")
print(f"docs/operations.md documents {len(documented)} metrics")

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "offset", "bool", "inf", "nan"}

def metric_names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.:$])[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        word = m.group(0)
        if word.lower() in KEYWORDS or re.match(r"\s*\(", e[m.end():]):
            continue
        names.add(word)
    return names

def check_names(where, expr, allowed_extra=()):
    for name in sorted(metric_names(expr)):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name in documented or name in allowed_extra or (base != name and base in histograms):
            continue
        bad(f"{where}: metric {name} is not in docs/operations.md's metrics table")

seen = set()
for name, expr in alert_exprs:
    seen |= metric_names(expr)
    check_names(f"alert {name}", expr, allowed_extra=("up",))
for where, expr, _ in dash_exprs:
    seen |= metric_names(expr)
    check_names(f"dashboard panel {where}", expr)
m = re.match(r"label_values\((\w+),", query or "")
if m:
    seen.add(m.group(1))
    check_names("dashboard variable instance", m.group(1))
print("metrics named: " + ", ".join(sorted(seen)))

# --- The alerts table of "Dashboard and alerts" names the rules file's alerts.
start = docs.find("### Dashboard and alerts")
if start < 0:
    bad("docs/operations.md: no section ### Dashboard and alerts")
else:
    end = docs.find("\n## ", start)
    table = set(re.findall(r"^\| `(AgencyMcp\w+)`", docs[start:end if end > 0 else None], re.M))
    for name in sorted(set(alert_names) - table):
        bad(f"docs/operations.md, Dashboard and alerts: alert {name} is not in the table")
    for name in sorted(table - set(alert_names)):
        bad(f"docs/operations.md, Dashboard and alerts: {name} is not in prometheus-alerts.yml")

sys.exit(1 if failed else 0)
EOF

echo "== promtool check rules on the dashboard's expressions"
if [ -s "$work/dashboard-rules.yml" ]; then
  promtool check rules "$work/dashboard-rules.yml" ||
    bad "a dashboard expression is not valid PromQL (above: dashboard:panel_ID_REFID)"
else
  bad "no dashboard expressions were written"
fi

if [ "$fail" -ne 0 ]; then
  echo "FAILED"
  exit 1
fi
echo "OK: alerts, their tests and the dashboard agree with docs/operations.md"
