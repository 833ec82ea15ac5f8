// The article / e-mail HTML from the gateway, as a reader would see its text: parsed in an inert
// document (DOMParser: no script runs, nothing loads) and rebuilt node by node in this document
// from an allowlist. Only text and a few structural elements are copied, with no attribute but
// colspan/rowspan: no script, event attribute, style, class, id, image, iframe, form, link or
// anything else that could load, run or restyle. Nothing is ever serialised and parsed again.

const KEEP = new Set([
  "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
  "strong", "b", "em", "i", "u", "s", "small", "sub", "sup", "mark", "span", "div", "section", "article",
  "header", "footer", "aside", "main", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption",
  "dl", "dt", "dd", "figure", "figcaption", "abbr", "cite", "q", "time", "del", "ins",
]);
// Dropped with everything inside them.
const DROP = new Set([
  "script", "style", "template", "noscript", "iframe", "frame", "frameset", "object", "embed", "applet",
  "svg", "math", "form", "input", "button", "select", "textarea", "option", "link", "meta", "base", "head",
  "title", "audio", "video", "source", "track", "canvas", "map", "area", "portal", "dialog", "slot",
]);
const MAX_DEPTH = 64;

// -> {node: DocumentFragment, hidden: number of hidden parts left out, images: number}
export function sanitize(html) {
  // A <base> would set the inert document's base URL, which the view's CSP (base-uri) refuses
  // with a console error; renamed, it is an unknown element, unwrapped (it has no content).
  const doc = new DOMParser().parseFromString(String(html).replace(/<base\b/gi, "<x-base"), "text/html");
  const out = document.createDocumentFragment();
  const stats = { hidden: 0, images: 0 };
  copyChildren(doc.body, out, stats, 0);
  return { node: out, hidden: stats.hidden, images: stats.images };
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
    if (hiddenByAuthor(n)) { stats.hidden++; continue; }
    if (depth >= MAX_DEPTH) { to.append(document.createTextNode(n.textContent || "")); continue; }
    if (tag === "img" || tag === "picture") {
      stats.images++;
      const alt = tag === "img" ? (n.getAttribute("alt") || "").trim() : "";
      const ph = document.createElement("span");
      ph.className = "img-ph";
      ph.textContent = alt ? `[image: ${alt}]` : "[image]";
      to.append(ph);
      continue;
    }
    if (tag === "a") {
      // A link's text, marked as a link; its address only as a tooltip (never followed here).
      const a = document.createElement("span");
      a.className = "a";
      const href = n.getAttribute("href");
      if (href) a.title = href;
      copyChildren(n, a, stats, depth + 1);
      to.append(a);
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
