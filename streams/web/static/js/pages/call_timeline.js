// The call as a timeline: turns (speaker, text, word timings, overlaps, latency before an agent
// turn), tool calls with arguments and results, node transitions, transfers.
//
// The worker's `/calls/{id}/timeline` gives the events themselves; where it is not served, the
// timeline is drawn from the result alone: its turns and latencies, and what the metrics' details
// name (bad tool calls, transition problems, the transfer).

import { getJson } from "../api.js";
import { h, ms } from "../dom.js";

export async function loadTimeline(callId, result) {
  try {
    const timeline = await getJson(`/calls/${encodeURIComponent(callId)}/timeline`);
    return { items: timeline.items, fromEvents: true, startMs: timeline.started_ts_ms };
  } catch {
    return { items: itemsFromResult(result), fromEvents: false, startMs: null };
  }
}

function itemsFromResult(result) {
  const evaluation = result.evaluation || {};
  const turns = evaluation.turns || [];
  // A latency sample belongs to the agent turn that answered its user transcript.
  const latencies = [...(evaluation.latencies || [])];
  const items = turns.map((turn, index) => {
    const item = { kind: "turn", turn_index: index, role: turn.role, text: turn.text, ts_ms: Date.parse(turn.timestamp) };
    if (turn.role === "agent") {
      const at = latencies.findIndex((l) => l.agent_transcript === turn.text);
      if (at >= 0) item.latency_ms = latencies.splice(at, 1)[0].latency_ms;
    }
    return item;
  });
  const metric = (name) => (result.metrics || []).find((m) => m.metric === name)?.details || {};
  for (const bad of metric("tool_call_accuracy").bad_calls || []) {
    items.push({ kind: "tool_call", name: bad.name, problem: bad.why, tool_call_id: bad.tool_call_id });
  }
  for (const problem of metric("transition_accuracy").problems || []) {
    items.push({ kind: "node_transition", from: problem.from, to: problem.to, problem: problem.problem });
  }
  const transfer = metric("transfer_wait_time");
  if (transfer.started_ts_ms) items.push({ kind: "transfer", phase: "started", ts_ms: transfer.started_ts_ms });
  if (transfer.bridged_ts_ms) items.push({ kind: "transfer", phase: "bridged", ts_ms: transfer.bridged_ts_ms });
  return items;
}

export function timelineView(timeline, { startMs, onCorrect }) {
  const origin = startMs ?? timeline.startMs ?? timeline.items.find((i) => i.ts_ms)?.ts_ms ?? 0;
  const list = h("ol", { class: "timeline" }, timeline.items.map((item) => h("li", { class: `tl-item tl-${item.kind}` },
    h("span", { class: "tl-time mono" }, item.ts_ms ? clock(item.ts_ms - origin) : ""),
    ITEM_VIEWS[item.kind] ? ITEM_VIEWS[item.kind](item, onCorrect) : h("span", {}, item.kind))));
  return h("div", {},
    timeline.fromEvents ? null : h("p", { class: "muted small" },
      "Drawn from the scored result: word timings and every tool call are shown when the worker serves the call's timeline."),
    list);
}

const ITEM_VIEWS = {
  turn: (item, onCorrect) => h("div", { class: `turn ${item.role}`, "data-turn": item.turn_index },
    h("div", { class: "turn-head" },
      h("span", { class: "speaker" }, item.role === "user" ? "Caller" : item.role === "agent" ? "Agent" : item.role),
      item.latency_ms !== undefined ? h("span", { class: "pill", title: "end-to-end latency before this turn" }, ms(item.latency_ms)) : null,
      item.overlap_ms ? h("span", { class: "pill warn", title: "started before the other speaker finished" }, `overlap ${ms(item.overlap_ms)}`) : null,
      item.corrected_text ? h("span", { class: "pill" }, "corrected") : null,
      item.role === "user" && onCorrect ? h("button", { class: "link", "data-action": "correct", onclick: () => onCorrect(item) }, "Correct transcript") : null),
    h("p", { class: "turn-text" }, item.words?.length ? wordsView(item.words) : item.text),
    item.corrected_text ? h("p", { class: "turn-corrected" }, `Reference: ${item.corrected_text}`) : null),
  tool_call: (item) => h("div", { class: "event tool" },
    h("span", { class: "event-kind" }, "Tool call"), h("code", {}, item.name),
    item.problem ? h("span", { class: "pill bad" }, item.problem) : null,
    item.arguments !== undefined ? h("pre", { class: "code" }, `args: ${pretty(item.arguments)}`) : null,
    item.result !== undefined ? h("pre", { class: "code" }, `result: ${pretty(item.result)}`) : null),
  node_transition: (item) => h("div", { class: "event node" },
    h("span", { class: "event-kind" }, "Node"), h("code", {}, item.from ?? "start"), " → ", h("code", {}, item.to),
    item.problem ? h("span", { class: "pill bad" }, item.problem) : null),
  transfer: (item) => h("div", { class: "event transfer" },
    h("span", { class: "event-kind" }, "Transfer"), item.phase, item.target ? [" to ", h("code", {}, item.target)] : null),
  kb_retrieval: (item) => h("div", { class: "event kb" },
    h("span", { class: "event-kind" }, "Knowledge base"), `“${item.query}” → ${(item.passages || []).length} passages`),
  latency: (item) => h("div", { class: "event latency" }, h("span", { class: "event-kind" }, "Latency"), ms(item.latency_ms)),
};

// Word timings: each word carries its start and end (ms from the turn's start) as a tooltip.
function wordsView(words) {
  return words.map(([word, start, end], i) => [i ? " " : "", h("span", { class: "word", title: `${start}–${end} ms` }, word)]);
}

function pretty(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value)); } catch { return value; }
  }
  return JSON.stringify(value);
}

function clock(offsetMs) {
  const total = Math.max(0, Math.round(offsetMs / 1000));
  return `${Math.floor(total / 60)}:${String(total % 60).padStart(2, "0")}`;
}
