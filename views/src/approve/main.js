// Approve before it goes out: the article to publish (title, body as a reader sees it, where)
// or the e-mail to send (recipient, subject, body), with Approve and Decline. The decision goes
// to the app-only tool view_decide with the single-use token the server gave this view only
// (result._meta["agency-mcp/approval"].token; the model never sees it). One click decides:
// both buttons stay disabled after it, so an approval acts once.
import { h, show, startView, readResult, errorBox, isObj, str, fmtTime, linkText } from "../shared/view.js";
import { sanitize } from "./sanitize.js";

const APPROVAL_META = "agency-mcp/approval";
let app;
let current = null; // {data, preview, token, kind, title}

const ACTIONS = {
  deploy_blog: ["Publish this article?", "Approve and publish"],
  deploy_geo: ["Publish this article?", "Approve and publish"],
  generate_blog: ["Generate and publish an article?", "Approve: generate and publish"],
  generate_geo: ["Generate and publish an article?", "Approve: generate and publish"],
  send_prospect_email: ["Send this e-mail?", "Approve and send"],
};

function kindOf(p) {
  const a = str(p.action) || "";
  if (/email|mail/.test(a) || str(p.recipient) || str(p.to) || str(p.subject)) return "email";
  return "article";
}

function field(label, value, attrs) {
  return h("div", { class: "field" }, h("div", { class: "label" }, label), h("div", Object.assign({ class: "value" }, attrs || {}), value));
}

function missing(text) {
  return h("span", { class: "muted" }, text);
}

// The body: sanitised HTML when the gateway gave HTML, else its plain text, else a statement.
function bodyOf(p, kind) {
  const box = h("div", { class: "body", "data-testid": "body" });
  const html = str(p.body_html);
  let extra = null;
  if (html) {
    const s = sanitize(html);
    box.classList.add("html");
    box.append(s.node);
    const bits = [];
    if (s.hidden) bits.push(`${s.hidden} hidden ${s.hidden === 1 ? "part" : "parts"} (not shown; a reader would not see ${s.hidden === 1 ? "it" : "them"})`);
    if (s.images) bits.push(`${s.images} ${s.images === 1 ? "image" : "images"} (not loaded in this preview)`);
    if (s.left.length) bits.push(`${s.left.length} ${s.left.length === 1 ? "part" : "parts"} a reader would see that this preview does not rebuild, named in [brackets] where ${s.left.length === 1 ? "it stands" : "they stand"}: ${s.left.join("; ")}`);
    if (bits.length) extra = h("p", { class: "muted small", "data-testid": "body-note" }, `The HTML also holds ${bits.join(" and ")}.`);
  } else if (str(p.body)) {
    box.classList.add("text");
    box.textContent = p.body;
  } else if (str(p.excerpt)) {
    box.classList.add("text");
    box.textContent = p.excerpt;
    extra = h("p", { class: "muted small" }, "An excerpt: the gateway gave no full text.");
  } else {
    box.append(missing(kind === "email" ? "The e-mail has no body to preview." : str(p.title) === null && /generate/.test(str(p.action) || "")
      ? "The text is written by the gateway's generator when you approve; it cannot be shown before."
      : "The gateway's record carries no article text to preview."));
  }
  if (p.body_truncated === true) extra = h("p", { class: "muted small" }, "The body is longer than this preview.");
  return [box, extra];
}

// "What else this contains": the server's inventory of what goes out besides its text (forms
// and fields, frames, links whose text is not where they go, remote images), as text.
function contentsOf(p, kind) {
  const arr = (v) => (Array.isArray(v) ? v : []);
  const items = [
    ...arr(p.interactive).map((i) => isObj(i) && str(i.description)).filter(Boolean)
      .map((d) => `${d} (not shown in this preview)`),
    ...arr(p.links).filter(isObj).map((l) => `The link ${str(l.text) ? `"${l.text}"` : "without text"} goes to ${str(l.href) || "?"}${l.misleading === true ? " (its text names another address)" : ""}`),
    ...arr(p.remote_images).filter((u) => str(u)).map((u) => `An image loaded from ${u} when it is read`),
  ];
  const more = typeof p.contents_unlisted === "number" && p.contents_unlisted > 0 ? p.contents_unlisted : 0;
  if (!items.length && !more) return null;
  const what = kind === "email" ? "e-mail" : "article";
  return h("div", { class: "callout warn", role: "note", "data-testid": "contents" },
    h("strong", null, "What else this contains"),
    h("p", null, `Besides its text, the ${what} holds what its reader meets below. Read it before approving.`),
    h("ul", null, items.map((t) => h("li", null, t))),
    more ? h("p", { class: "muted small" }, `And ${more} more not listed here.`) : null);
}

function whereOf(p) {
  const parts = [];
  const site = str(p.site);
  if (site) parts.push(linkText(app, site));
  const target = str(p.deployment_target);
  if (target) parts.push(h("span", { class: "badge" }, target));
  return h("div", { class: "where-line" }, parts.length ? parts : missing("Not given"));
}

function render() {
  const { data, preview: p, token, kind } = current;
  const [heading, approveLabel] = ACTIONS[str(p.action) || ""] || (kind === "email" ? ACTIONS.send_prospect_email : ["Approve this action?", "Approve"]);
  const head = h("div", { class: "head" }, h("div", null, h("h1", null, heading),
    h("div", { class: "sub" }, [str(data.client_id), str(data.expires_at) ? `expires ${fmtTime(data.expires_at)}` : null].filter(Boolean).join(" · "))));

  const warn = p.hidden_text === true
    ? h("div", { class: "callout warn", role: "note" }, h("strong", null, "This text hides something from readers."),
        h("p", null, kind === "email"
          ? "The e-mail holds text a reader would not see (HTML comments, hidden elements or invisible characters). It is not shown here, and it would be sent as written."
          : "The article holds text a reader would not see (HTML comments, hidden elements or invisible characters). It is not shown here, and it would be published as written."))
    : null;

  let fields;
  if (kind === "email") {
    fields = [
      field("To", str(p.recipient) || str(p.to) || missing("No recipient given"), { "data-testid": "recipient" }),
      field("Subject", str(p.subject) || missing("No subject"), { "data-testid": "subject" }),
    ];
  } else {
    const generating = /generate/.test(str(p.action) || "");
    fields = [
      field("Title", str(p.title) || missing(generating ? "Written by the generator when you approve" : "No title given"), { "data-testid": "title", class: "value title" }),
      field("Where", whereOf(p), { "data-testid": "where" }),
      str(p.url) ? field("Address", linkText(app, p.url)) : null,
      str(p.keyword) ? field("Keyword", p.keyword) : null,
      str(p.current_status) ? field("Now", p.current_status === "published" ? "Already published: approving publishes it again" : p.current_status) : null,
      p.auto_deploy === true ? field("Auto-deploy", "On: it goes live without a further step") : null,
    ];
  }
  const [body, bodyNote] = bodyOf(p, kind);

  const approve = h("button", { type: "button", class: "btn primary", "data-testid": "approve", onclick: () => decide("approve") }, approveLabel);
  const decline = h("button", { type: "button", class: "btn", "data-testid": "decline", onclick: () => decide("decline") }, "Decline");
  current.buttons = [approve, decline];
  const outcome = h("div", { class: "outcome", "data-testid": "outcome", role: "status", "aria-live": "polite" });
  current.outcome = outcome;
  if (!token) {
    approve.disabled = true;
    decline.disabled = true;
    outcome.append(h("p", { class: "muted" }, "This view cannot decide here: the result carries no approval token for it. Answer in the conversation instead."));
  }
  show(head, warn, contentsOf(p, kind), h("section", { class: "card" }, h("div", { class: "fields" }, fields), h("div", { class: "label" }, kind === "email" ? "Message" : "Article"), body, bodyNote),
    h("div", { class: "actions" }, decline, approve), outcome);
}

async function decide(decision) {
  if (!current || current.decided) return;
  current.decided = true;
  for (const b of current.buttons) b.disabled = true;
  const out = current.outcome;
  out.replaceChildren(h("p", { class: "muted" }, decision === "approve"
    ? "Approving… if your assistant opens a confirmation dialog, confirm there."
    : "Declining…"));
  let shown;
  try {
    const res = await app.callServerTool({ name: "view_decide", arguments: { approval: current.token, decision } });
    shown = outcomeOf(res);
  } catch (e) {
    shown = { ok: false, text: e && e.message ? e.message : String(e), status: "error" };
  }
  out.replaceChildren(outcomeBox(shown));
  const what = current.kind === "email" ? `the e-mail${current.title ? ` "${current.title}"` : ""}` : `the article${current.title ? ` "${current.title}"` : ""}`;
  const text = `In the approval view the person ${decision === "approve" ? "approved" : "declined"} ${what} (${str(current.preview.action) || "action"}). Outcome: ${shown.status}${shown.text ? `: ${shown.text}` : ""}${shown.url ? ` (${shown.url})` : ""}`;
  try {
    await app.updateModelContext({ content: [{ type: "text", text }] });
  } catch {
    /* a host without model context updates: the outcome is shown all the same */
  }
}

// {ok, status, text, url} from a CallToolResult that is the action's outcome.
function outcomeOf(res) {
  const r = readResult(res);
  if (r.error) return { ok: false, status: "error", text: r.error };
  const d = r.data;
  return {
    ok: d.ok !== false,
    status: str(d.status) || (d.ok === false ? "failed" : "done"),
    text: str(d.message) || "",
    url: str(d.url),
  };
}

function outcomeBox(o) {
  const cls = !o.ok || o.status === "error" ? "error" : o.status === "declined" ? "" : "good";
  const title = o.status === "error" ? "Not done" : o.status === "declined" ? "Declined: nothing was done" : `Done: ${o.status}`;
  return h("div", { class: `callout ${cls}`, "data-status": o.status },
    h("strong", null, title),
    o.text ? h("p", null, o.text) : null,
    o.url ? h("p", null, linkText(app, o.url)) : null);
}

app = startView("approve", {
  result(result) {
    const r = readResult(result);
    if (r.error) return show(h("div", { "data-testid": "outcome" }, errorBox(r.error, "Not done")));
    const d = r.data;
    if (d.status !== "confirmation_required" || !isObj(d.preview)) {
      // Not a question: the action's outcome (or another answer) is shown as such.
      return show(h("h1", null, "Outcome"), h("div", { class: "outcome", "data-testid": "outcome" }, outcomeBox(outcomeOf(result))));
    }
    const meta = isObj(result._meta) && isObj(result._meta[APPROVAL_META]) ? result._meta[APPROVAL_META] : {};
    const kind = kindOf(d.preview);
    current = { data: d, preview: d.preview, token: str(meta.token), kind, title: kind === "email" ? str(d.preview.subject) : str(d.preview.title), decided: false };
    render();
  },
});
