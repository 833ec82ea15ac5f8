// Rankings view: a client's keyword positions over time from list_rankings / latest_rankings
// (or the movers of ranking_changes). It plots exactly the rows the tool returned; a keyword's
// history comes from the app-only tool view_ranking_history, movers from ranking_changes.
import { h, show, startView, readResult, errorBox, empty, isObj, str, num, dayOf, fmtDay, fmtNum, linkText, shortUrl } from "../shared/view.js";
import { drawChart, PALETTE } from "./chart.js";

let app;
const st = {
  clientId: null,
  input: {},
  rows: [], // the tool result's rows as {keyword, date, position, url}
  keywords: [],
  picked: "", // "" = the tool result's rows; else a keyword's history
  history: null, // {keyword, points, truncated} | {keyword, error} | {keyword, loading}
  movers: null, // {from, to, rows} | {error} | {loading}
  note: null, // result-level note (truncated, total)
  serverNote: null, // the result's own "note" (e.g. how old the newest data is)
  changesOnly: false,
  hseq: 0,
  mseq: 0,
};
const els = {};

function rowOf(r) {
  return {
    keyword: str(r.keyword),
    date: dayOf(r.tracked_at) || dayOf(r.created_at) || dayOf(r.date),
    position: num(r.position),
    url: str(r.url),
  };
}

// The points drawn now and what was left out (unknown position or date), with line breaks
// where a keyword's position is unknown between two known ones.
function plotted() {
  const src = st.picked && st.history && st.history.points ? st.history.points : st.picked ? [] : st.rows;
  const byKw = new Map();
  for (const p of src) {
    if (!byKw.has(p.keyword)) byKw.set(p.keyword, []);
    byKw.get(p.keyword).push(p);
  }
  const points = [];
  let noPos = 0;
  let noDate = 0;
  for (const list of byKw.values()) {
    const sorted = list.slice().sort((a, b) => ((a.date || "") < (b.date || "") ? -1 : 1));
    let gap = false;
    for (const p of sorted) {
      if (!p.date) { noDate++; continue; }
      if (p.position === null) { noPos++; gap = true; continue; }
      points.push(Object.assign({}, p, { breakBefore: gap }));
      gap = false;
    }
  }
  return { points, noPos, noDate, total: src.length };
}

function render() {
  const title = h("div", { class: "head" },
    h("div", null, h("h1", null, "Keyword rankings"),
      h("div", { class: "sub" }, [st.clientId, st.note].filter(Boolean).join(" · ") || "—")),
  );
  els.picker = h("select", { "data-testid": "keyword-picker", id: "kw", onchange: (e) => pick(e.target.value) },
    h("option", { value: "" }, st.changesOnly ? `Pick a keyword (${st.keywords.length})` : `All keywords in this result (${st.keywords.length})`),
    st.keywords.map((k) => h("option", { value: k, selected: k === st.picked }, k)));
  const controls = h("div", { class: "controls" },
    h("label", { for: "kw" }, "Keyword"), els.picker,
    h("span", { class: "range" }, "Dates ", els.range = h("span", { "data-testid": "date-range" }, "—")));
  els.summary = h("p", { class: "summary", "data-testid": "chart-summary" });
  els.chartBox = h("div", { class: "chart-box" });
  els.readout = h("div", { class: "readout", "aria-live": "polite" }, "\u00a0");
  els.notes = h("div", { class: "notes" });
  els.legend = h("div", { class: "legend" });
  els.table = h("div");
  els.movers = h("div");
  show(title, h("section", { class: "card" }, controls, els.summary, els.readout, els.chartBox, els.legend, els.notes, els.table),
    h("section", { class: "card" }, moversHead(), els.movers));
  renderChart();
  renderMovers();
}

function renderChart() {
  const { points, noPos, noDate, total } = plotted();
  const days = points.map((p) => p.date).sort();
  els.range.textContent = days.length ? (days[0] === days[days.length - 1] ? fmtDay(days[0]) : `${fmtDay(days[0])} – ${fmtDay(days[days.length - 1])}`) : "—";
  els.readout.textContent = "\u00a0";
  els.summary.textContent = summaryOf(points);
  const hist = st.picked ? st.history : null;
  if (hist && hist.loading) els.chartBox.replaceChildren(empty(`Loading the history of “${st.picked}”…`));
  else if (hist && hist.error) els.chartBox.replaceChildren(errorBox(hist.error, `Could not load the history of “${st.picked}”`));
  else if (points.length === 0) els.chartBox.replaceChildren(empty(st.changesOnly && !st.picked ? "This result lists position changes between two dates (below). Pick a keyword to see its history." : total ? "No row has a known position to plot." : "No ranking rows to plot."));
  else {
    const width = els.chartBox.clientWidth || 680;
    els.chartBox.replaceChildren(drawChart(points, {
      width, focus: st.picked || null,
      onHover: (p) => { els.readout.textContent = p ? `${p.keyword || "(no keyword)"} · position ${p.position} · ${fmtDay(p.date)}` : "\u00a0"; },
    }));
  }
  // A legend when there are few keywords (the colours follow the order the chart first meets them).
  const keys = [...new Set(points.map((p) => p.keyword ?? ""))];
  els.legend.replaceChildren(...(!st.picked && keys.length > 1 && keys.length <= 8 ? keys.map((k, i) =>
    h("button", { type: "button", class: "legend-item", title: "Show this keyword's history", onclick: () => k && showKeyword(k) },
      h("span", { class: "swatch", style: `background:${PALETTE[i % PALETTE.length]}` }), k || "(no keyword)")) : []));
  const notes = [];
  if (noPos) notes.push(`${noPos} ${noPos === 1 ? "row has" : "rows have"} no position (not ranked or not measured) and ${noPos === 1 ? "is" : "are"} not plotted.`);
  if (noDate) notes.push(`${noDate} ${noDate === 1 ? "row has" : "rows have"} no date and ${noDate === 1 ? "is" : "are"} not plotted.`);
  if (!st.picked && points.length && new Set(points.map((p) => p.date)).size === 1) notes.push("Every row is from one day: pick a keyword to see its history.");
  if (hist && hist.truncated) notes.push("The history is longer than what the server returned.");
  if (!st.picked && st.serverNote) notes.push(`Note from the server: ${st.serverNote}.`);
  els.notes.replaceChildren(...notes.map((n) => h("p", { class: "muted small", "data-testid": "chart-note" }, n)));
  els.table.replaceChildren(points.length ? dataTable(points, !st.picked && new Set(points.map((p) => p.date)).size === 1) : "");
}

// The chart in words, above it: the newest position and the change since the first date shown
// (one keyword), or how many keywords went up and down (several). Lower is better.
function summaryOf(points) {
  if (!points.length) return "";
  const byKw = new Map();
  for (const p of points) {
    if (!byKw.has(p.keyword)) byKw.set(p.keyword, []);
    byKw.get(p.keyword).push(p);
  }
  const ends = [...byKw.entries()].map(([keyword, list]) => {
    const sorted = list.slice().sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
    return { keyword, first: sorted[0], last: sorted[sorted.length - 1] };
  });
  const moved = (e) => e.first.position - e.last.position; // > 0: up (a smaller number)
  if (ends.length === 1) {
    const { keyword, first, last } = ends[0];
    let s = `${keyword ? `“${keyword}”` : "This keyword"} ranks ${last.position} on ${fmtDay(last.date)}`;
    if (first.date !== last.date) {
      const d = moved(ends[0]);
      s += d === 0 ? `, the same as on ${fmtDay(first.date)}` : `, ${d > 0 ? "up" : "down"} ${Math.abs(d)} since ${fmtDay(first.date)} (position ${first.position})`;
    }
    return `${s}. A lower position is better.`;
  }
  const newest = ends.reduce((m, e) => (e.last.date > m ? e.last.date : m), "");
  const now = ends.filter((e) => e.last.date === newest);
  const best = now.reduce((b, e) => (!b || e.last.position < b.last.position ? e : b), null);
  const avg = now.reduce((t, e) => t + e.last.position, 0) / now.length;
  let s = `${ends.length} keywords. On ${fmtDay(newest)}: ${now.length} ranked, average position ${avg.toFixed(1)}, best ${best.last.position}${best.keyword ? ` (“${best.keyword}”)` : ""}`;
  const spans = ends.filter((e) => e.first.date !== e.last.date);
  if (spans.length) {
    const up = spans.filter((e) => moved(e) > 0).length;
    const down = spans.filter((e) => moved(e) < 0).length;
    s += `; since each one's first date shown: ${up} up, ${down} down, ${spans.length - up - down} unchanged`;
  }
  return `${s}. A lower position is better.`;
}

function dataTable(points, open) {
  const sorted = points.slice().sort((a, b) => (a.date < b.date ? 1 : a.date > b.date ? -1 : a.position - b.position));
  return h("details", { class: "data", open }, h("summary", null, `Show the ${points.length} plotted ${points.length === 1 ? "row" : "rows"} as a table`),
    h("table", null,
      h("thead", null, h("tr", null, h("th", { scope: "col" }, "Keyword"), h("th", { scope: "col" }, "Date"), h("th", { scope: "col", class: "num" }, "Position"), h("th", { scope: "col" }, "Page"))),
      h("tbody", null, sorted.map((p) => h("tr", null,
        h("td", null, p.keyword || "—"), h("td", { class: "nowrap" }, fmtDay(p.date)), h("td", { class: "num" }, String(p.position)), h("td", null, linkText(app, p.url, shortUrl(p.url))))))));
}


async function pick(keyword) {
  st.picked = keyword;
  if (!keyword) { st.history = null; return renderChart(); }
  const seq = ++st.hseq;
  st.history = { keyword, loading: true };
  renderChart();
  let next;
  try {
    const args = { client_id: st.clientId, keyword };
    const res = await app.callServerTool({ name: "view_ranking_history", arguments: args });
    const r = readResult(res);
    if (r.error) next = { keyword, error: r.error };
    else {
      const pts = Array.isArray(r.data.points) ? r.data.points.filter(isObj) : [];
      next = { keyword, truncated: r.data.truncated === true, points: pts.map((p) => ({ keyword, date: dayOf(p.date), position: num(p.position), url: str(p.url) })) };
    }
  } catch (e) {
    next = { keyword, error: e && e.message ? e.message : String(e) };
  }
  if (seq !== st.hseq || st.picked !== keyword) return;
  st.history = next;
  renderChart();
}

// ---- movers
function latestDay() {
  const days = st.rows.map((r) => r.date).filter(Boolean).sort();
  return days.length ? days[days.length - 1] : null;
}

function moversHead() {
  const latest = latestDay();
  const days = st.rows.map((r) => r.date).filter(Boolean).sort();
  let since = dayOf(st.input.from) || (days.length && days[0] !== latest ? days[0] : null);
  if (!since) since = new Date(Date.parse((latest || new Date().toISOString().slice(0, 10)) + "T00:00:00Z") - 7 * 86400000).toISOString().slice(0, 10);
  // No <form>: hosts sandbox views without allow-forms, where a submit is blocked.
  els.since = h("input", {
    type: "date", id: "since", "data-testid": "movers-since", value: since, max: latest || null,
    onkeydown: (e) => { if (e.key === "Enter") { e.preventDefault(); loadMovers(); } },
  });
  els.moversBtn = h("button", { type: "button", class: "btn", "data-testid": "movers-load", onclick: () => loadMovers() }, "Show movers");
  return h("div", { class: "controls" },
    h("h2", { class: "inline" }, "Movers"), h("label", { for: "since" }, "since"), els.since, els.moversBtn);
}

async function loadMovers() {
  const from = els.since.value;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(from)) { st.movers = { error: "Choose a date." }; return renderMovers(); }
  const to = dayOf(st.input.to) && st.input.from === from ? dayOf(st.input.to) : latestDay() || new Date().toISOString().slice(0, 10);
  const seq = ++st.mseq;
  st.movers = { loading: true };
  els.moversBtn.disabled = true;
  renderMovers();
  let next;
  try {
    const res = await app.callServerTool({ name: "ranking_changes", arguments: { client_id: st.clientId, from, to } });
    const r = readResult(res);
    next = r.error ? { error: r.error } : { from, to, rows: Array.isArray(r.data.rows) ? r.data.rows.filter(isObj) : [] };
  } catch (e) {
    next = { error: e && e.message ? e.message : String(e) };
  }
  els.moversBtn.disabled = false;
  if (seq !== st.mseq) return;
  st.movers = next;
  renderMovers();
}

function renderMovers() {
  const m = st.movers;
  let body;
  if (!m) body = empty("Choose a date and press “Show movers” to see which keywords moved since then.");
  else if (m.loading) body = empty("Loading movers…");
  else if (m.error) body = errorBox(m.error, "Could not load the movers");
  else if (!m.rows.length) body = empty(`No keyword moved between ${fmtDay(m.from)} and ${fmtDay(m.to)}.`);
  else {
    body = h("div", null,
      h("p", { class: "muted small" }, `${m.rows.length} ${m.rows.length === 1 ? "keyword" : "keywords"}, ${fmtDay(m.from)} → ${m.to ? fmtDay(m.to) : "latest"}. A lower position is better.`),
      h("table", { class: "movers" },
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "Keyword"), h("th", { scope: "col", class: "num" }, "From"), h("th", { scope: "col", class: "num" }, "To"), h("th", { scope: "col", class: "num" }, "Change"))),
        h("tbody", { "data-testid": "movers" }, m.rows.map(moverRow))));
  }
  els.movers.replaceChildren(body);
}

function moverRow(r) {
  const from = num(r.from_position);
  const to = num(r.to_position);
  // change > 0: moved up (a smaller position number); computed from the positions when absent.
  const change = num(r.change) !== null ? r.change : from !== null && to !== null ? from - to : null;
  const cls = change === null || change === 0 ? "" : change > 0 ? "up" : "down";
  const label = change === null ? "—" : change === 0 ? "0" : `${change > 0 ? "▲" : "▼"} ${Math.abs(change)}`;
  return h("tr", { "data-testid": "mover", "data-keyword": str(r.keyword) || "", "data-change": change === null ? "" : String(change) },
    h("td", null, str(r.keyword) ? h("button", { type: "button", class: "kw", title: "Show this keyword's history in the chart", onclick: () => showKeyword(r.keyword) }, r.keyword) : "—"),
    h("td", { class: "num" }, from === null ? "—" : String(from)),
    h("td", { class: "num" }, to === null ? "—" : String(to)),
    h("td", { class: `num ${cls}`, "aria-label": change === null ? "unknown" : change > 0 ? `up ${change}` : change < 0 ? `down ${-change}` : "no change" }, label));
}

function showKeyword(keyword) {
  if (![...els.picker.options].some((o) => o.value === keyword)) els.picker.append(h("option", { value: keyword }, keyword));
  els.picker.value = keyword;
  pick(keyword);
  els.picker.focus();
  els.picker.scrollIntoView({ block: "nearest" });
}

// ---- the tool's result
function onResult(result) {
  const r = readResult(result);
  if (r.error) return show(errorBox(r.error));
  const d = r.data;
  st.clientId = str(d.client_id) || str(st.input.client_id);
  const rows = Array.isArray(d.rows) ? d.rows.filter(isObj) : [];
  const isChanges = rows.some((x) => "from_position" in x || "to_position" in x || "change" in x);
  st.rows = isChanges ? [] : rows.map(rowOf);
  st.keywords = [...new Set(rows.map((x) => str(x.keyword)).filter(Boolean))].sort((a, b) => a.localeCompare(b));
  st.picked = "";
  st.history = null;
  const returned = num(d.returned) !== null ? d.returned : rows.length;
  st.note = `${fmtNum(returned)} ${returned === 1 ? "row" : "rows"}${num(d.total) !== null ? ` of ${fmtNum(d.total)}` : d.truncated === true ? " (more exist)" : ""}`;
  st.changesOnly = isChanges;
  st.serverNote = str(d.note);
  st.movers = isChanges ? { from: dayOf(st.input.from), to: dayOf(st.input.to), rows } : null;
  render();
}

app = startView("rankings", {
  input(args) { st.input = args; },
  result: onResult,
});

let lastW = 0;
window.addEventListener("resize", () => {
  const w = els.chartBox ? els.chartBox.clientWidth : 0;
  if (w && Math.abs(w - lastW) > 4) { lastW = w; renderChart(); }
});
