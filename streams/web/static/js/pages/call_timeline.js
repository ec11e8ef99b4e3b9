// The call as a timeline: turns (speaker, text, word timings, overlaps, latency before an agent
// turn), tool calls with arguments and results, node transitions, transfers, knowledge-base
// retrievals, corrections and annotations.
//
// Drawn from the call's events (`GET /calls/{id}/events`) while the worker keeps them; after that
// (its retention), from the result alone: its turns and latencies, and what the metrics' details
// name (bad tool calls, transition problems, the transfer).

import { getJson } from "../api.js";
import { h, ms } from "../dom.js";

export async function loadTimeline(callId, result) {
  try {
    const { events } = await getJson(`/calls/${encodeURIComponent(callId)}/events`);
    return itemsFromEvents(events, result);
  } catch {
    return { items: itemsFromResult(result), fromEvents: false, startMs: null };
  }
}

function itemsFromEvents(events, result) {
  const startMs = events.find((e) => e.type === "call.started")?.ts_ms ?? events[0]?.ts_ms ?? null;
  const latencies = [...(result.evaluation?.latencies || [])];
  const details = (name) => (result.metrics || []).find((m) => m.metric === name)?.details || {};
  const badTools = new Map((details("tool_call_accuracy").bad_calls || []).map((b) => [b.tool_call_id, b.why]));
  const badMoves = new Map((details("transition_accuracy").problems || []).map((p) => [p.index, p.problem]));
  const items = [], turns = [], tools = new Map();
  const lastSpoken = {}; // by role: the span of its latest turn with word timings
  let transitions = 0;
  for (const event of events) {
    const data = event.data || {}, at = event.ts_ms;
    if (event.type === "turn") {
      const turn = { kind: "turn", turn_index: turns.length, role: data.role, text: data.text, words: data.words,
        ts_ms: data.start_ms !== null && data.start_ms !== undefined && startMs !== null ? startMs + data.start_ms : at };
      const span = wordSpan(data.words);
      const other = span && lastSpoken[turn.role === "user" ? "agent" : "user"];
      if (other && span.start < other.end && span.end > other.start) {
        turn.overlap_ms = Math.min(other.end, span.end) - Math.max(other.start, span.start);
      }
      if (span) lastSpoken[turn.role] = span;
      turn.end_ms = data.end_ms;
      if (turn.role === "agent") {
        const i = latencies.findIndex((l) => l.agent_transcript === turn.text);
        if (i >= 0) turn.latency_ms = latencies.splice(i, 1)[0].latency_ms;
      }
      turns.push(turn); items.push(turn);
    } else if (event.type === "tool.call") {
      // A call and its result may come as two events of the same tool_call_id: one row.
      const key = data.tool_call_id || `${items.length}`;
      const item = tools.get(key) || { kind: "tool_call", ts_ms: at };
      Object.assign(item, { name: data.name, arguments: data.arguments, problem: badTools.get(data.tool_call_id) });
      if (data.result !== undefined && data.result !== null) item.result = data.result;
      if (!tools.has(key)) { tools.set(key, item); items.push(item); }
    } else if (event.type === "node.transition") {
      items.push({ kind: "node_transition", ts_ms: at, from: data.from, to: data.to, problem: badMoves.get(transitions++) });
    } else if (event.type === "transfer") {
      items.push({ kind: "transfer", ts_ms: at, phase: data.phase, target: data.target });
    } else if (event.type === "kb.retrieval") {
      items.push({ kind: "kb_retrieval", ts_ms: at, query: data.query, passages: data.passages });
    } else if (event.type === "transcript.corrected") {
      const turn = turns[data.turn_index];
      if (turn) turn.corrected_text = data.text;
      items.push({ kind: "note", ts_ms: at, label: "Correction", text: `turn ${data.turn_index}: “${data.text}”` });
    } else if (event.type === "call.annotated") {
      items.push({ kind: "note", ts_ms: at, label: "Annotated", text: `sentiment ${data.user_sentiment ?? "–"}` });
    } else if (event.type === "call.ended") {
      items.push({ kind: "note", ts_ms: at, label: "Ended", text: data.stop_reason || "" });
    }
  }
  return { items, fromEvents: true, startMs };
}

// Overlaps as the overlapping_speech scorer counts them (scorers/qa/overlapping_speech.py): a turn's
// span runs from its first word's start to its last word's end; it overlaps when it shares time with
// the other speaker's latest span; turns without word timings take no part.
function wordSpan(words) {
  if (!words?.length) return null;
  return { start: Math.min(...words.map((w) => w[1])), end: Math.max(...words.map((w) => w[2])) };
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
      "Drawn from the scored result: the worker no longer keeps this call's events (word timings, every tool call)."),
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
    h("p", { class: "turn-text" }, item.text),
    item.words?.length ? wordsView(item.words) : null,
    item.corrected_text ? h("p", { class: "turn-corrected" }, `Reference: ${item.corrected_text}`) : null),
  tool_call: (item) => h("div", { class: "event tool" },
    h("span", { class: "event-kind" }, "Tool call"), h("code", {}, item.name),
    item.problem ? h("span", { class: "pill bad" }, item.problem) : null,
    item.arguments !== undefined ? h("pre", { class: "code" }, `args: ${pretty(item.arguments)}`) : null,
    item.result !== undefined ? h("pre", { class: "code" }, `result: ${pretty(item.result)}`) : null),
  node_transition: (item) => h("div", { class: "event node" },
    h("span", { class: "event-kind" }, "Node"), item.from ? [h("code", {}, item.from), " → "] : "→ ", h("code", {}, item.to),
    item.problem ? h("span", { class: "pill bad" }, item.problem) : null),
  transfer: (item) => h("div", { class: "event transfer" },
    h("span", { class: "event-kind" }, "Transfer"), item.phase, item.target ? [" to ", h("code", {}, item.target)] : null),
  kb_retrieval: (item) => h("div", { class: "event kb" },
    h("span", { class: "event-kind" }, "Knowledge base"), `“${item.query}” → ${(item.passages || []).length} passages`),
  note: (item) => h("div", { class: "event note" }, h("span", { class: "event-kind" }, item.label), item.text),
};

// Word timings, folded: each word with its start and end (seconds from the call's start).
function wordsView(words) {
  const seconds = (value) => (value / 1000).toFixed(2);
  return h("details", { class: "words" },
    h("summary", {}, `${words.length} word timings · ${seconds(words[0][1])}–${seconds(words[words.length - 1][2])} s`),
    h("div", { class: "word-chips" }, words.map(([word, start, end]) =>
      h("span", { class: "word" }, word, h("small", {}, ` ${seconds(start)}–${seconds(end)}`)))));
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
