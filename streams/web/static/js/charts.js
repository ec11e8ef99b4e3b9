// Inline SVG charts: a pass-rate line over volume bars, per metric, one bucket per `step`.

import { h, pct, shortTime } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 320, H = 120, PAD_L = 34, PAD_R = 8, PAD_T = 8, PAD_B = 18;

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  for (const child of children) if (child) el.append(child);
  return el;
}

// buckets: [{start_ms, calls, applied, passed, pass_rate}], oldest first, each `stepMs` long.
export function passRateChart(buckets, { fromMs, toMs, stepMs, threshold } = {}) {
  const endOf = (b) => b.end_ms ?? b.start_ms + stepMs;
  const plotW = W - PAD_L - PAD_R, plotH = H - PAD_T - PAD_B;
  const start = fromMs ?? (buckets[0]?.start_ms ?? 0);
  const end = toMs ?? (buckets.length ? endOf(buckets[buckets.length - 1]) : start + 1);
  const span = Math.max(1, end - start);
  const x = (t) => PAD_L + ((t - start) / span) * plotW;
  const y = (rate) => PAD_T + (1 - rate) * plotH;
  const maxVolume = Math.max(1, ...buckets.map((b) => b.applied ?? b.calls ?? 0));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });

  for (const rate of [0, 0.5, 1]) {
    svg.append(s("line", { x1: PAD_L, x2: W - PAD_R, y1: y(rate), y2: y(rate), class: "gridline" }));
    svg.append(s("text", { x: PAD_L - 4, y: y(rate) + 3, class: "axis", "text-anchor": "end" }, text(pct(rate, 0))));
  }
  if (threshold !== undefined && threshold !== null) {
    svg.append(s("line", { x1: PAD_L, x2: W - PAD_R, y1: y(threshold), y2: y(threshold), class: "threshold" }));
  }
  // Volume bars: how many calls the metric applied to in the bucket, scaled to the tallest.
  for (const b of buckets) {
    const volume = b.applied ?? b.calls ?? 0;
    if (!volume) continue;
    const bw = Math.max(1, x(endOf(b)) - x(b.start_ms) - 1);
    const bh = (volume / maxVolume) * plotH * 0.35;
    svg.append(s("rect", { x: x(b.start_ms), y: PAD_T + plotH - bh, width: bw, height: bh, class: "volume" },
      s("title", {}, text(`${shortTime(b.start_ms, span)}: ${volume} calls`))));
  }
  // The pass-rate line, broken where a bucket had no applicable call.
  let path = "", pen = false;
  for (const b of buckets) {
    if (b.pass_rate === null || b.pass_rate === undefined) { pen = false; continue; }
    const px = (x(b.start_ms) + x(endOf(b))) / 2;
    path += `${pen ? "L" : "M"}${px.toFixed(1)},${y(b.pass_rate).toFixed(1)}`;
    pen = true;
    svg.append(s("circle", { cx: px, cy: y(b.pass_rate), r: 1.8, class: "point" },
      s("title", {}, text(`${shortTime(b.start_ms, span)}: ${pct(b.pass_rate)} of ${b.applied} (${b.passed} passed)`))));
  }
  if (path) svg.insertBefore(s("path", { d: path, class: "rate" }), svg.querySelector("circle"));
  svg.append(s("text", { x: PAD_L, y: H - 4, class: "axis" }, text(shortTime(start, span))));
  svg.append(s("text", { x: W - PAD_R, y: H - 4, class: "axis", "text-anchor": "end" }, text(shortTime(end, span))));
  return svg;
}

// A thin horizontal bar: a score out of 100 against its pass mark.
export function scoreBar(score, threshold) {
  const bar = h("span", { class: "scorebar" });
  if (score !== null && score !== undefined) {
    const fill = h("span", { class: `fill ${threshold !== undefined && score < threshold ? "low" : ""}` });
    fill.style.width = `${Math.max(0, Math.min(100, score))}%`;
    bar.append(fill);
  }
  if (threshold !== undefined && threshold !== null) {
    const mark = h("span", { class: "mark", title: `pass at ${threshold}` });
    mark.style.left = `${threshold}%`;
    bar.append(mark);
  }
  return bar;
}

function text(value) {
  return document.createTextNode(value);
}
