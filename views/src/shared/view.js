// What the four views share: the App bridge with its theming, a DOM builder that only ever
// makes text nodes of data, tool-result reading and formatting.
import { App, applyDocumentTheme, applyHostStyleVariables } from "@modelcontextprotocol/ext-apps";

export const VERSION = "1.0.0";

// h("p", {class: "x", "data-testid": "y", onclick: fn}, "text", node, [more]) -> element.
// Strings become text nodes (never HTML); attributes go through setAttribute; null/false skip.
export function h(tag, attrs, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg
    ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

export function root() {
  return document.getElementById("app");
}

export function show(...children) {
  const r = root();
  r.replaceChildren();
  append(r, children);
}

export const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
export const str = (v) => (typeof v === "string" && v.trim() !== "" ? v : null);
export const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

// A CallToolResult as {data} (its structuredContent, or JSON in its text) or {error: text}.
export function readResult(result) {
  if (!isObj(result)) return { error: "The tool gave no result." };
  const text = Array.isArray(result.content)
    ? result.content.filter((c) => c && c.type === "text" && typeof c.text === "string").map((c) => c.text).join("\n")
    : "";
  if (result.isError) return { error: errorText(text) };
  if (isObj(result.structuredContent)) return { data: result.structuredContent };
  try {
    const parsed = JSON.parse(text);
    if (isObj(parsed)) return parsed.error ? { error: errorText(text) } : { data: parsed };
  } catch {
    /* not JSON: fall through */
  }
  return { error: text || "The tool result has no data this view can show." };
}

function errorText(text) {
  try {
    const e = JSON.parse(text).error;
    if (isObj(e)) return str(e.message) || str(e.reason) || text;
    if (typeof e === "string") return e;
  } catch {
    /* plain text */
  }
  return text || "The tool reported an error without a message.";
}

export function errorBox(message, title = "The tool reported an error") {
  return h("div", { class: "callout error", role: "alert", "data-testid": "error" },
    h("strong", null, title), h("p", null, message));
}

export function empty(message) {
  return h("p", { class: "muted empty" }, message);
}

// Dates: "YYYY-MM-DD" or ISO timestamps, shown in UTC so the day never shifts.
const dayFmt = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", timeZone: "UTC" });
const timeFmt = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZone: "UTC", timeZoneName: "short",
});
export function dayOf(v) {
  const s = str(v);
  const m = s && /^(\d{4}-\d{2}-\d{2})/.exec(s);
  return m ? m[1] : null;
}
export function fmtDay(v) {
  const d = dayOf(v);
  return d ? dayFmt.format(new Date(d + "T00:00:00Z")) : "—";
}
export function fmtTime(v) {
  const s = str(v);
  const t = s ? Date.parse(s) : NaN;
  return Number.isNaN(t) ? (s || "—") : timeFmt.format(new Date(t));
}
const numFmt = new Intl.NumberFormat();
export const fmtNum = (v) => (num(v) === null ? "—" : numFmt.format(v));

// Starts the view: handlers are set before connect(); the host's theme and style variables
// are applied on connect and on every change (without them: the system's light/dark).
export function startView(name, { input, result, cancelled }) {
  const app = new App({ name: `agency-mcp ${name}`, version: VERSION }, {}, { autoResize: true });
  app.ontoolinput = (p) => input && input(isObj(p && p.arguments) ? p.arguments : {});
  app.ontoolresult = (r) => result(r);
  app.ontoolcancelled = () => cancelled ? cancelled() : show(empty("The tool call was cancelled."));
  app.onhostcontextchanged = (ctx) => applyContext(ctx);
  app.onteardown = async () => ({});
  applyContext(null);
  app.connect().then(
    () => applyContext(app.getHostContext()),
    (e) => show(errorBox(e && e.message ? e.message : String(e), "Could not connect to the host")),
  );
  return app;
}

let theme = null;
function applyContext(ctx) {
  if (ctx && (ctx.theme === "light" || ctx.theme === "dark")) theme = ctx.theme;
  const system = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  applyDocumentTheme(theme || system);
  const vars = ctx && ctx.styles && ctx.styles.variables;
  if (isObj(vars)) applyHostStyleVariables(vars);
}

// A link from the data: shown as text; a click asks the host to open it (never navigates here).
export function linkText(app, url, label) {
  const u = str(url);
  if (!u) return h("span", { class: "muted" }, "—");
  if (!/^https?:\/\//i.test(u)) return h("span", { class: "url" }, label || u);
  return h("button", {
    type: "button", class: "link", title: u,
    onclick: () => app.openLink({ url: u }).catch(() => {}),
  }, label || u);
}

// A page address shortened to its path when it is on `site`'s host (the whole address stays
// the tooltip and what a click opens); any other address whole.
export function shortUrl(u, site) {
  try {
    const x = new URL(u);
    const base = site ? new URL(site) : null;
    if (base && base.host === x.host) return x.pathname + x.search + x.hash || u;
    if (!base) return x.pathname + x.search + x.hash || u;
  } catch {
    /* not a URL: shown as given */
  }
  return u;
}

export function stat(label, value, attrs, extra) {
  return h("div", { class: "stat" }, h("div", { class: "stat-label" }, label),
    h("div", Object.assign({ class: "stat-value" }, attrs || {}), value), extra || null);
}
