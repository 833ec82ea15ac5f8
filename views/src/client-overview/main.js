// Client overview: get_client's record, then the overview resource agency://clients/{id}/overview
// read through the host, as a small dashboard: tracked keywords, the latest audit score,
// articles by status, and the date range of the data.
import { h, show, startView, readResult, errorBox, empty, isObj, str, num, fmtNum, fmtDay, fmtTime, linkText, stat } from "../shared/view.js";

let app;
let input = {};
const KINDS = [["blogs", "Blog posts"], ["geo_articles", "Geo articles"]];

function clientHead(c, id) {
  const where = [str(c.city), str(c.state)].filter(Boolean).join(", ");
  return h("div", { class: "head" },
    h("div", null,
      h("h1", null, str(c.name) || str(c.brand_name) || id || "Client"),
      h("div", { class: "sub" }, [str(c.industry), where, str(c.id) || id].filter(Boolean).join(" · "))),
    h("div", { class: "head-right" },
      str(c.status) ? h("span", { class: `badge ${c.status === "active" ? "ok" : ""}` }, c.status) : null,
      str(c.website) ? linkText(app, c.website) : null));
}

function publishing(c) {
  const bits = [];
  if (str(c.deployment_target)) bits.push(`Publishes to ${c.deployment_target}`);
  if (c.auto_deploy === true) bits.push("auto-deploy on: generated articles go live at once");
  else if (c.auto_deploy === false) bits.push("auto-deploy off");
  return bits.length ? h("p", { class: "muted small" }, bits.join(" · ")) : null;
}

function dashboard(client, ov, ovError) {
  const kw = isObj(ov && ov.keywords) ? ov.keywords : {};
  const audits = isObj(ov && ov.audits) ? ov.audits : {};
  const latest = isObj(audits.latest) ? audits.latest : null;
  const articles = isObj(ov && ov.articles) ? ov.articles : {};
  const first = str(kw.first_tracked);
  const last = str(kw.last_tracked);
  const range = first || last ? (first === last ? fmtDay(first) : `${fmtDay(first)} – ${fmtDay(last)}`) : "—";
  const score = latest ? num(latest.score) : null;
  const ic = latest && isObj(latest.issue_counts) ? latest.issue_counts : {};
  const icText = ["critical", "warning", "notice"].filter((s) => num(ic[s]) !== null).map((s) => `${ic[s]} ${s}`).join(" · ");

  const tiles = ov ? h("div", { class: "grid" },
    stat("Tracked keywords", fmtNum(num(kw.tracked_keywords)), { "data-testid": "tracked-keywords" },
      num(kw.ranking_rows) !== null ? h("div", { class: "stat-foot" }, `${fmtNum(kw.ranking_rows)} ranking rows`) : null),
    stat("Latest audit score", score === null ? "—" : String(score), { "data-testid": "audit-score", class: `stat-value ${score === null ? "" : score >= 80 ? "good" : score >= 50 ? "warn" : "bad"}` },
      h("div", { class: "stat-foot" }, latest ? [icText, str(latest.created_at) ? fmtDay(latest.created_at) : null].filter(Boolean).join(" · ") || "—"
        : num(audits.count) === 0 ? "No audit yet" : "—")),
    stat("Articles", fmtNum(totalArticles(articles)), { "data-testid": "articles-total" },
      h("div", { class: "stat-foot" }, KINDS.filter(([k]) => isObj(articles[k])).map(([k, l]) => `${fmtNum(num(articles[k].count))} ${l.toLowerCase()}`).join(" · ") || "—")),
    stat("Rankings data", range, { "data-testid": "date-range", class: "stat-value small-value" },
      h("div", { class: "stat-foot" }, num(audits.count) !== null ? `${fmtNum(audits.count)} ${audits.count === 1 ? "audit" : "audits"} on record` : ""))) : null;

  return [
    clientHead(client, str(ov && ov.client_id)),
    publishing(client),
    ovError ? errorBox(ovError, "The overview is not available") : null,
    tiles,
    ov ? articlesCard(articles) : null,
    latest ? auditCard(latest) : null,
  ];
}

function totalArticles(a) {
  let t = null;
  for (const [k] of KINDS) if (isObj(a[k]) && num(a[k].count) !== null) t = (t || 0) + a[k].count;
  return t;
}

// A status as a reader says it: "not_published" is "not published".
const statusLabel = (s) => String(s).replace(/_/g, " ");

// Articles by status: summed over kinds when the gateway gives by_status; else the counts it has.
function articlesCard(a) {
  const kinds = KINDS.filter(([k]) => isObj(a[k]));
  if (!kinds.length) return h("section", { class: "card" }, h("h2", null, "Articles"), empty("The overview has no article counts."));
  const statuses = new Map();
  for (const [k] of kinds) {
    const bs = isObj(a[k].by_status) ? a[k].by_status : null;
    if (bs) for (const [s, n] of Object.entries(bs)) if (num(n) !== null) statuses.set(s, (statuses.get(s) || 0) + n);
  }
  const byStatus = statuses.size
    ? h("div", { class: "chips" }, [...statuses.entries()].map(([s, n]) =>
        h("div", { class: "chip" }, h("span", { class: "chip-label" }, statusLabel(s)), h("span", { class: "chip-value", "data-testid": `articles-${s}` }, fmtNum(n)))))
    : h("p", { class: "muted small" }, "This gateway gives article counts only, not counts by status.");
  return h("section", { class: "card" }, h("h2", null, "Articles"), byStatus,
    h("table", null,
      h("thead", null, h("tr", null, h("th", { scope: "col" }, "Kind"), h("th", { scope: "col", class: "num" }, "Count"), h("th", { scope: "col" }, "By status"), h("th", { scope: "col" }, "Latest created"))),
      h("tbody", null, kinds.map(([k, label]) => {
        const x = a[k];
        const bs = isObj(x.by_status) ? Object.entries(x.by_status).map(([s, n]) => `${statusLabel(s)} ${n}`).join(" · ") : "—";
        return h("tr", { "data-kind": k },
          h("td", null, label), h("td", { class: "num", "data-testid": `articles-${k}` }, fmtNum(num(x.count))),
          h("td", { class: "muted" }, bs), h("td", null, fmtDay(x.latest_created)));
      }))));
}

function auditCard(latest) {
  return h("section", { class: "card" }, h("h2", null, "Latest audit"),
    h("div", { class: "kv" },
      h("span", { class: "muted" }, "Page"), h("span", null, linkText(app, latest.url)),
      h("span", { class: "muted" }, "When"), h("span", null, str(latest.created_at) ? fmtTime(latest.created_at) : "—"),
      h("span", { class: "muted" }, "Issues"), h("span", null, num(latest.issues_found) !== null ? fmtNum(latest.issues_found) : "—"),
      str(latest.share_url) ? [h("span", { class: "muted" }, "Report"), h("span", null, linkText(app, latest.share_url, "Open the shared report"))] : null));
}

async function onResult(result) {
  const r = readResult(result);
  if (r.error) return show(errorBox(r.error));
  const client = r.data;
  const id = str(client.id) || str(client.client_id) || str(input.client_id);
  show(...dashboard(client, null, null), empty("Loading the overview…"));
  if (!id) return show(...dashboard(client, null, "The client record has no id to read its overview with."));
  let ov = null;
  let err = null;
  try {
    const res = await app.readServerResource({ uri: `agency://clients/${encodeURIComponent(id)}/overview` });
    const c = res && Array.isArray(res.contents) ? res.contents.find((x) => x && typeof x.text === "string") : null;
    if (!c) err = "The server returned no overview text.";
    else {
      const parsed = JSON.parse(c.text);
      if (isObj(parsed)) ov = parsed; else err = "The overview is not a JSON object.";
    }
  } catch (e) {
    err = e && e.message ? e.message : String(e);
  }
  const merged = Object.assign({}, ov && isObj(ov.client) ? ov.client : {}, client);
  show(...dashboard(merged, ov, err));
}

app = startView("client-overview", { input(args) { input = args; }, result: onResult });
