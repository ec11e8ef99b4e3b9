// Small helpers to build the page: elements, numbers and times as a QA lead reads them.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function pct(rate, digits = 1) {
  return rate === null || rate === undefined ? "–" : `${(100 * rate).toFixed(digits)}%`;
}

export function num(value, digits = 1) {
  if (value === null || value === undefined) return "–";
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  return Number(value).toFixed(digits);
}

export function ms(value) {
  if (value === null || value === undefined) return "–";
  return value >= 10000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value).toLocaleString("en-US")} ms`;
}

// Event times are shown in UTC: calls replayed from another time zone read the same everywhere.
export function time(tsMs) {
  if (tsMs === null || tsMs === undefined) return "–";
  return new Date(tsMs).toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

export function shortTime(tsMs, spanMs) {
  const iso = new Date(tsMs).toISOString();
  return spanMs > 2 * 86400000 ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 16);
}

export function metricLabel(metric) {
  return METRIC_LABELS[metric] || metric;
}

// The QA sheet's dashboard labels (the QA-judges seed).
const METRIC_LABELS = {
  hallucination: "Hallucination",
  kb_recall: "Knowledge base recall",
  wer: "Word error rate",
  overlapping_speech: "Overlapping speech",
  sentiment: "Sentiment",
  naturalness: "Naturalness",
  tool_call_accuracy: "Tool call accuracy",
  transition_accuracy: "Transition accuracy",
  transfer_success: "Transfer success",
  transfer_wait_time: "Transfer wait time",
  latency: "Latency",
  weighted_score: "Weighted score",
};

// A verdict as the QA sheet draws it: filled green pass, filled red fail, empty circle n/a.
export function verdictBadge(passed, title) {
  const kind = passed === true ? "pass" : passed === false ? "fail" : "na";
  const text = kind === "na" ? "n/a" : kind;
  return h("span", { class: `verdict ${kind}`, title: title || text },
    h("span", { class: "dot", "aria-hidden": "true" }), text);
}

export function callLink(callId) {
  return h("a", { href: `#/calls/${encodeURIComponent(callId)}`, class: "mono" }, callId);
}

export function notice(text, kind = "info") {
  return h("div", { class: `notice ${kind}` }, text);
}

export function section(title, ...body) {
  return h("section", { class: "card" }, h("h2", {}, title), ...body);
}

export function table(headers, rows, attrs = {}) {
  return h("table", { class: "grid", ...attrs },
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows));
}
