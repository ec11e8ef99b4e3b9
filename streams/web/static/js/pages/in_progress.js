// Calls in progress: the open calls with their metrics so far, from the worker that holds each.
// Their scores are provisional: they change with every event until the call ends.

import { getJson } from "../api.js";
import { callLink, h, metricLabel, ms, notice, num, replace, time, verdictBadge } from "../dom.js";
import { onResult } from "../live.js";

const REFRESH_MS = 3000;

export async function renderInProgress(view) {
  const body = h("div");
  replace(view, h("div", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Calls in progress"),
      h("span", { class: "provisional" }, "provisional scores")),
    body));
  const draw = async () => replace(body, ...(await openCalls()));
  await draw();
  // Open calls change with every event, not only with results: refresh on a short timer too.
  const timer = setInterval(draw, REFRESH_MS);
  const stop = onResult(() => draw());
  return () => { clearInterval(timer); stop(); };
}

async function openCalls() {
  const { calls, workers_unreachable: unreachable = [] } = await getJson("/calls?state=open&limit=200");
  const warning = unreachable.length ? notice(`Not reached: ${unreachable.join(", ")}; their open calls are missing.`, "warn") : null;
  if (!calls.length) return [warning, h("section", { class: "card" }, h("p", { class: "muted" }, "No call in progress."))];
  return [warning, h("div", { class: "open-grid" }, calls.map(openCard))];
}

function openCard(call) {
  const value = (name) => (call.metrics || []).find((m) => m.metric === name)?.value;
  const overlaps = value("overlapping_speech"), latency = value("latency"), tools = value("tool_call_accuracy");
  return h("article", { class: "card open-call", "data-call": call.call_id },
    h("header", {}, callLink(call.call_id), h("span", { class: "provisional" }, "in progress")),
    h("div", { class: "metric-sub" },
      h("span", {}, call.agent_id || "–"), h("span", {}, plural(call.turns, "turn")),
      h("span", {}, plural(call.events_applied, "event")), h("span", {}, `last ${time(call.last_ts_ms)}`)),
    h("div", { class: "metric-sub" },
      h("span", {}, `latency p50 ${latency === null || latency === undefined ? "–" : ms(latency)}`),
      h("span", {}, plural(overlaps ?? 0, "overlap")),
      h("span", {}, tools === null || tools === undefined ? "no tool call" : `tool calls ${Math.round(100 * tools)}% good`)),
    h("ul", { class: "mini-sheet" }, (call.metrics || []).map((m) => h("li", {},
      h("span", {}, metricLabel(m.metric)), verdictBadge(m.passed, m.details?.reason),
      h("span", { class: "mono" }, m.score === null || m.score === undefined ? "–" : num(m.score))))));
}

function plural(count, noun) {
  return `${num(count)} ${noun}${count === 1 ? "" : "s"}`;
}
