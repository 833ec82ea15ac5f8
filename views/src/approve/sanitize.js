// The article / e-mail HTML from the gateway, as a reader would see its text: parsed in an inert
// document (DOMParser: no script runs, nothing loads) and rebuilt node by node in this document
// from an allowlist. Only text and a few structural elements are copied, with no attribute but
// colspan/rowspan: no script, event attribute, style, class, id, image, iframe, form, link or
// anything else that could load, run or restyle. Nothing is ever serialised and parsed again.
// What a reader would see but is not rebuilt (forms, fields, buttons, SVG text, frames, embeds,
// images, a link's target) is named in words where it stands and counted.

const KEEP = new Set([
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
  "strong", "b", "em", "i", "u", "s", "small", "sub", "sup", "mark", "span", "div", "section", "article",
  "header", "footer", "aside", "main", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
  "dl", "dt", "dd", "figure", "figcaption", "abbr", "cite", "q", "time", "del", "ins",
]);
// Dropped with everything inside them: nothing a reader sees.
const DROP = new Set([
  "script", "style", "template", "noscript", "option", "link", "meta", "base", "head", "title", "source",
  "track", "map", "area", "slot", "datalist",
]);
// Seen by a reader but not rebuilt here: each is left out, and named where it stands ([...]) and
// in `left` (a form's own content is still copied).
const NAMED = new Set([
  "iframe", "frame", "frameset", "object", "embed", "applet", "portal", "svg", "math", "form", "input",
  "button", "select", "textarea", "audio", "video", "canvas",
]);
const MAX_DEPTH = 64;

// -> {node: DocumentFragment, hidden: number of hidden parts left out, images: number,
//     left: descriptions of what a reader sees that is not rebuilt here (forms, fields, ...)}
export function sanitize(html) {
  // A <base> would set the inert document's base URL, which the view's CSP (base-uri) refuses
  // with a console error; renamed, it is an unknown element, unwrapped (it has no content).
  const doc = new DOMParser().parseFromString(String(html).replace(/<base\b/gi, "<x-base"), "text/html");
  const out = document.createDocumentFragment();
  const stats = { hidden: 0, images: 0, left: [] };
  copyChildren(doc.body, out, stats, 0);
  return { node: out, hidden: stats.hidden, images: stats.images, left: stats.left };
}

const cut = (t, n) => { const s = (t || "").replace(/\s+/g, " ").trim(); return s.length > n ? `${s.slice(0, n)}…` : s; };
const remote = (u) => /^(https?:)?\/\//i.test(u || "");

// What a reader would meet in place of a NAMED element, in words.
function describe(el) {
  const tag = el.localName;
  const attr = (a) => cut(el.getAttribute(a), 300);
  const label = attr("aria-label") || attr("placeholder") || attr("title");
  const q = (t) => (t ? ` "${t}"` : "");
  switch (tag) {
    case "form": return `a form${attr("action") ? ` sending to ${attr("action")}` : ""}`;
    case "input": {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if (type === "password") return `a password field${q(label)}`;
      if (/^(submit|button|reset)$/.test(type)) return `a button${q(attr("value") || label)}`;
      if (type === "checkbox" || type === "radio") return `a ${type === "radio" ? "radio button" : "checkbox"}${q(label || attr("name"))}`;
      return `a ${type} field${q(label || attr("name"))}`;
    }
    case "button": return `a button${q(cut(el.textContent, 80) || label)}`;
    case "select": return `a drop-down list${q(label || attr("name"))}`;
    case "textarea": return `a text box${q(label || cut(el.textContent, 80))}`;
    case "svg": return cut(el.textContent, 80) ? `SVG text "${cut(el.textContent, 80)}"` : "an SVG drawing";
    case "math": return `a formula${q(cut(el.textContent, 80))}`;
    case "object": return `embedded content${attr("data") ? ` from ${attr("data")}` : ""}`;
    case "audio": case "video": return `${tag === "audio" ? "an audio" : "a video"}${attr("src") ? ` from ${attr("src")}` : ""}`;
    case "canvas": return "a drawing area (canvas)";
    case "embed": case "applet": return `embedded content${attr("src") ? ` from ${attr("src")}` : ""}`;
    default: return `an embedded frame${attr("src") ? ` showing ${attr("src")}` : ""}`;
  }
}

function named(el, to, stats) {
  const what = describe(el);
  stats.left.push(what);
  const ph = document.createElement("span");
  ph.className = "ph";
  ph.textContent = `[${what}]`;
  to.append(ph);
}

function hiddenByAuthor(el) {
  if (el.hasAttribute("hidden") || el.getAttribute("aria-hidden") === "true") return true;
  const style = (el.getAttribute("style") || "").toLowerCase().replace(/\s+/g, "");
  return /display:none|visibility:hidden|font-size:0|opacity:0(?![.\d])/.test(style);
}

function copyChildren(from, to, stats, depth) {
  for (const n of from.childNodes) {
    if (n.nodeType === 3) { to.append(document.createTextNode(n.data)); continue; }
    if (n.nodeType === 8) { stats.hidden++; continue; } // comment
    if (n.nodeType !== 1) continue;
    const tag = n.localName;
    if (DROP.has(tag)) continue;
    if (hiddenByAuthor(n) || (tag === "input" && (n.getAttribute("type") || "").toLowerCase() === "hidden") ||
        (tag === "dialog" && !n.hasAttribute("open"))) { stats.hidden++; continue; }
    if (NAMED.has(tag)) {
      named(n, to, stats);
      if (tag === "form" && depth < MAX_DEPTH) copyChildren(n, to, stats, depth + 1); // its text is seen
      continue;
    }
    if (depth >= MAX_DEPTH) { to.append(document.createTextNode(n.textContent || "")); continue; }
    if (tag === "img" || tag === "picture") {
      stats.images++;
      const alt = tag === "img" ? (n.getAttribute("alt") || "").trim() : "";
      const src = tag === "img" ? cut(n.getAttribute("src"), 300) : "";
      const ph = document.createElement("span");
      ph.className = "img-ph";
      ph.textContent = `[image${alt ? `: ${alt}` : ""}${remote(src) ? ` loaded from ${src}` : ""}]`;
      to.append(ph);
      continue;
    }
    if (tag === "a") {
      // A link's text, marked as a link; its address only as a tooltip (never followed here).
      const a = document.createElement("span");
      a.className = "a";
      const href = cut(n.getAttribute("href"), 300);
      if (href) a.title = href;
      copyChildren(n, a, stats, depth + 1);
      to.append(a);
      // Where it goes, in words, when its text does not say so.
      if (href && !href.startsWith("#") && cut(n.textContent, 400) !== href) {
        const t = document.createElement("span");
        t.className = "ph";
        t.textContent = `[goes to ${href}]`;
        to.append(t);
      }
      continue;
    }
    if (!KEEP.has(tag)) { copyChildren(n, to, stats, depth + 1); continue; } // unwrap
    const el = document.createElement(tag);
    if (tag === "td" || tag === "th") {
      for (const attr of ["colspan", "rowspan"]) {
        const v = n.getAttribute(attr);
        if (v && /^\d{1,3}$/.test(v)) el.setAttribute(attr, v);
      }
    }
    copyChildren(n, el, stats, depth + 1);
    to.append(el);
  }
}
