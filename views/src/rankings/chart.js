// The rankings chart: an SVG drawn here (a chart library and the App bridge together do not fit
// the 200 KB budget). One <circle data-testid="point"> per point given, position 1 at the top,
// straight lines between a keyword's consecutive known positions only: nothing smoothed,
// nothing interpolated across a missing position.
import { h, fmtDay } from "../shared/view.js";

export const PALETTE = ["#2f6fed", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0c8599", "#a87a00", "#5c677d"];
const DAY = 86400000;

// points: [{keyword, date: "YYYY-MM-DD", position: number, url}] (positions known, dates known).
// focus: a keyword to draw strong (others faint), or null.
export function drawChart(points, { width, focus, onHover }) {
  const W = Math.max(320, Math.round(width));
  const H = 260;
  const m = { l: 40, r: 18, t: 14, b: 30 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;

  const days = points.map((p) => Date.parse(p.date + "T00:00:00Z"));
  let d0 = Math.min(...days);
  let d1 = Math.max(...days);
  const single = d0 === d1;
  const maxPos = Math.max(...points.map((p) => p.position));
  const top = niceMax(maxPos);
  const x = (t) => (single ? m.l + pw / 2 : m.l + ((t - d0) / (d1 - d0)) * pw);
  const y = (pos) => m.t + ((pos - 1) / (top - 1)) * ph;

  const svg = h("svg:svg", {
    "data-testid": "chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
    "aria-label": `Ranking positions, ${points.length} points; position 1 at the top`,
    class: "chart",
  });
  // Grid and y labels
  for (const t of yTicks(top)) {
    svg.append(h("svg:line", { x1: m.l, x2: W - m.r, y1: y(t), y2: y(t), class: "grid-line" }));
    svg.append(h("svg:text", { x: m.l - 8, y: y(t) + 4, "text-anchor": "end", class: "tick" }, String(t)));
  }
  // x labels: each distinct date when few, else evenly spaced
  const distinct = [...new Set(points.map((p) => p.date))].sort();
  const labels = distinct.length <= 7 ? distinct : spread(d0, d1, 6).map((t) => new Date(t).toISOString().slice(0, 10));
  labels.forEach((d, i) => {
    const t = Date.parse(d + "T00:00:00Z");
    const anchor = single ? "middle" : i === 0 && x(t) - m.l < 30 ? "start" : x(t) > W - m.r - 30 ? "end" : "middle";
    svg.append(h("svg:text", { x: x(t), y: H - 10, "text-anchor": anchor, class: "tick" }, shortDay(d)));
  });
  svg.append(h("svg:text", { x: 10, y: m.t + ph / 2, class: "axis", transform: `rotate(-90 10 ${m.t + ph / 2})`, "text-anchor": "middle" }, "Position"));

  // Series per keyword, drawn in a stable order (first seen).
  const series = new Map();
  for (const p of points) {
    const k = p.keyword ?? "";
    if (!series.has(k)) series.set(k, []);
    series.get(k).push(p);
  }
  const keys = [...series.keys()];
  const colour = (k) => (focus !== null && focus !== undefined ? "var(--accent)" : PALETTE[keys.indexOf(k) % PALETTE.length]);
  const lines = h("svg:g", { class: "lines" });
  const dots = h("svg:g", { class: "dots" });
  for (const k of keys) {
    const list = series.get(k).slice().sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
    const dim = focus && k !== focus ? " dim" : "";
    // a line only between consecutive points (the caller breaks runs at unknown positions)
    const segs = [];
    let run = [];
    for (const p of list) {
      if (run.length && p.breakBefore) { segs.push(run); run = []; }
      run.push(p);
    }
    segs.push(run);
    for (const s of segs) {
      if (s.length < 2) continue;
      const d = s.map((p, i) => `${i ? "L" : "M"}${x(Date.parse(p.date + "T00:00:00Z")).toFixed(1)} ${y(p.position).toFixed(1)}`).join("");
      lines.append(h("svg:path", { d, class: "series" + dim, stroke: colour(k), "data-keyword": k }));
    }
    for (const p of list) {
      const c = h("svg:circle", {
        "data-testid": "point", "data-date": p.date, "data-position": String(p.position), "data-keyword": k,
        cx: x(Date.parse(p.date + "T00:00:00Z")).toFixed(1), cy: y(p.position).toFixed(1),
        r: focus ? 4.5 : 3.5, fill: colour(k), class: "point" + dim,
      }, h("svg:title", null, `${k || "(no keyword)"}: position ${p.position} on ${fmtDay(p.date)}`));
      c.addEventListener("mouseenter", () => onHover && onHover(p, svg));
      c.addEventListener("mouseleave", () => onHover && onHover(null, svg));
      dots.append(c);
      // One keyword with few points: its positions written beside them.
      if (focus && points.length <= 24) {
        dots.append(h("svg:text", { x: c.getAttribute("cx"), y: (y(p.position) - 9).toFixed(1), "text-anchor": "middle", class: "pt-label" }, String(p.position)));
      }
    }
  }
  svg.append(lines, dots);
  return svg;
}

function niceMax(v) {
  for (const n of [5, 10, 20, 30, 50, 100]) if (v <= n) return n;
  return Math.ceil(v / 50) * 50;
}

function yTicks(top) {
  const step = top <= 5 ? 1 : top <= 10 ? 2 : top <= 20 ? 5 : top <= 50 ? 10 : top <= 100 ? 20 : top / 5;
  const ticks = [1];
  for (let t = step; t <= top; t += step) if (t > 1) ticks.push(Math.round(t));
  if (ticks[ticks.length - 1] !== top) ticks.push(top);
  return ticks;
}

function spread(a, b, n) {
  const out = [];
  const step = Math.max(DAY, Math.round((b - a) / (n - 1) / DAY) * DAY);
  for (let t = a; t <= b; t += step) out.push(t);
  return out;
}

const shortFmt = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
function shortDay(d) {
  return shortFmt.format(new Date(d + "T00:00:00Z"));
}
