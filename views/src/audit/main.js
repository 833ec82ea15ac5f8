// Audit view: one audit report from get_audit_issues: score, counts by severity, the issues
// grouped by severity and sortable; counts only when the gateway gives no detail.
import { h, show, startView, readResult, errorBox, empty, isObj, str, num, fmtNum, fmtTime, linkText, stat, shortUrl } from "../shared/view.js";

const SEVERITIES = ["critical", "warning", "notice"];
const LABEL = { critical: "Critical", warning: "Warnings", notice: "Notices" };
const COLUMNS = [
  ["severity", "Severity"],
  ["page", "Page"],
  ["recommendation", "Recommendation"],
];

let app;
let state = null; // {data, rows, sort: {key, dir}}

function severityOf(row) {
  const s = str(row.severity);
  return s ? s.toLowerCase() : "other";
}

function counts(data, rows) {
  const audit = isObj(data.audit) ? data.audit : {};
  const ic = isObj(audit.issue_counts) ? audit.issue_counts : {};
  const fromRows = {};
  for (const r of rows) fromRows[severityOf(r)] = (fromRows[severityOf(r)] || 0) + 1;
  const out = {};
  for (const s of SEVERITIES) {
    // The audit's own counts first (they cover every issue, not only the returned rows).
    if (num(ic[s]) !== null) out[s] = ic[s];
    else if (s === "critical" && num(audit.critical_issues) !== null) out[s] = audit.critical_issues;
    else if (s === "warning" && num(audit.warnings) !== null) out[s] = audit.warnings;
    else if (rows.length) out[s] = fromRows[s] || 0;
    else out[s] = null;
  }
  return out;
}

function scoreClass(score) {
  if (score === null) return "";
  return score >= 80 ? "good" : score >= 50 ? "warn" : "bad";
}

function hasDetail(row) {
  return isObj(row) && (str(row.page) !== null || str(row.recommendation) !== null);
}

function render() {
  const { data, rows } = state;
  const audit = isObj(data.audit) ? data.audit : {};
  const c = counts(data, rows);
  const score = num(audit.score);
  // Every returned row is listed once any row has detail; none has: counts only.
  const detailed = rows.some(hasDetail) ? rows : [];

  const header = h("div", { class: "head" },
    h("div", null,
      h("h1", null, "SEO audit"),
      h("div", { class: "sub" },
        [str(audit.url) ? audit.url : null, audit.created_at ? fmtTime(audit.created_at) : null, str(audit.status)]
          .filter(Boolean).join(" · "))),
    str(audit.share_url) ? linkText(app, audit.share_url, "Open the shared report") : null);

  const tiles = h("div", { class: "grid" },
    stat("Score", score === null ? "—" : String(score), { "data-testid": "score", class: "stat-value score " + scoreClass(score) },
      score === null ? null : h("div", { class: "meter", "aria-hidden": "true" }, h("span", { class: scoreClass(score), style: `width:${Math.max(0, Math.min(100, score))}%` }))),
    ...SEVERITIES.map((s) => stat(LABEL[s], c[s] === null ? "—" : fmtNum(c[s]), { "data-testid": `count-${s}`, class: `stat-value sev-${s}` })),
    num(audit.pages_crawled) !== null ? stat("Pages crawled", fmtNum(audit.pages_crawled)) : null);

  let body;
  if (detailed.length === 0) {
    body = h("div", { class: "callout", "data-testid": "detail-unavailable", role: "status" },
      h("strong", null, "Issue detail is not available from this gateway."),
      h("p", null, "It reports how many issues the audit found by severity (above), but not which page each issue is on or what to do about it."));
  } else {
    body = h("div", { class: "card flush" }, issuesTable(detailed));
  }
  const more = detailed.length === 0 ? null : num(data.total) !== null && num(data.returned) !== null && data.total > data.returned
    ? h("p", { class: "muted small" }, `Showing ${fmtNum(data.returned)} of ${fmtNum(data.total)} issues.`)
    : data.truncated === true ? h("p", { class: "muted small" }, "More issues exist than this result returned.") : null;

  show(header, tiles, body, more);
}

function issuesTable(rows) {
  const { key, dir } = state.sort;
  // Pages on the audited site are shown by their path (the site is in the header).
  const site = isObj(state.data.audit) ? str(state.data.audit.url) : null;
  const sevOrder = (r) => { const i = SEVERITIES.indexOf(severityOf(r)); return i < 0 ? SEVERITIES.length : i; };
  const text = (r, k) => (str(r[k]) || "").toLowerCase();
  const groups = new Map();
  for (const r of rows) {
    const s = severityOf(r);
    if (!groups.has(s)) groups.set(s, []);
    groups.get(s).push(r);
  }
  // Groups in severity order (reversed when sorting severity descending); rows inside a group
  // sorted by the chosen column, original order breaking ties.
  const order = [...groups.keys()].sort((a, b) => sevOrder({ severity: a }) - sevOrder({ severity: b }) || a.localeCompare(b));
  if (key === "severity" && dir < 0) order.reverse();
  const head = h("thead", null, h("tr", null, COLUMNS.map(([k, label]) =>
    h("th", { scope: "col", "aria-sort": k === key ? (dir > 0 ? "ascending" : "descending") : "none" },
      h("button", { type: "button", class: "sort", "data-testid": `sort-${k}`, onclick: () => sortBy(k) },
        label, h("span", { class: "arrow", "aria-hidden": "true" }, k === key ? (dir > 0 ? "▲" : "▼") : "↕"))))));
  const bodies = order.map((s) => {
    const list = groups.get(s).map((r, i) => [r, i]);
    if (key !== "severity") list.sort((a, b) => dir * text(a[0], key).localeCompare(text(b[0], key)) || a[1] - b[1]);
    return h("tbody", { "data-group": s },
      h("tr", { class: "group" }, h("th", { colspan: "3", scope: "rowgroup" },
        h("span", { class: `badge ${s}` }, LABEL[s] || s), ` ${list.length} ${list.length === 1 ? "issue" : "issues"}`)),
      list.map(([r]) => h("tr", { "data-testid": "issue", "data-severity": s, "data-page": str(r.page) || "" },
        h("td", null, h("span", { class: `badge ${s}` }, str(r.severity) || "—")),
        h("td", { class: "page" }, str(r.page) ? linkText(app, r.page, shortUrl(r.page, site)) : h("span", { class: "muted" }, "—")),
        h("td", null, str(r.recommendation) || h("span", { class: "muted" }, "—")))));
  });
  return h("table", null, head, bodies);
}

function sortBy(k) {
  state.sort = state.sort.key === k ? { key: k, dir: -state.sort.dir } : { key: k, dir: 1 };
  render();
  const b = document.querySelector(`[data-testid="sort-${k}"]`);
  if (b) b.focus();
}

app = startView("audit", {
  result(result) {
    const r = readResult(result);
    if (r.error) return show(errorBox(r.error));
    const rows = Array.isArray(r.data.rows) ? r.data.rows.filter(isObj) : [];
    state = { data: r.data, rows, sort: { key: "severity", dir: 1 } };
    if (!isObj(r.data.audit) && rows.length === 0) return show(empty("This result holds no audit."));
    render();
  },
});
