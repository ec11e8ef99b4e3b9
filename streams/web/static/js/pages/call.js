// Call page: the QA sheet. The timeline on the left, the verdicts on the right; a reviewer corrects
// a user turn's transcript or sets the post-call sentiment, and the page shows the version that
// the re-score publishes.

import { getJson, postJson } from "../api.js";
import { h, notice, replace, section, time } from "../dom.js";
import { onResult } from "../live.js";
import { href } from "../route.js";
import { cohortsView, metricsView, signalsView, versionsView } from "./call_sheet.js";
import { loadTimeline, timelineView } from "./call_timeline.js";

const SENTIMENTS = ["Positive", "Neutral", "Negative", "Unknown"];
// The sentiment metric's value per label (the QA-judges seed), to name the one in force.
const SENTIMENT_SCORES = { Positive: 100, Neutral: 70, Unknown: 50, Negative: 20 };

export async function renderCall(view, route) {
  const callId = route.id;
  const path = `/calls/${encodeURIComponent(callId)}`;
  let shown = null; // the result on the page
  let drawing = 0; // a newer draw wins over one still loading

  const draw = async (message = null) => {
    const mine = ++drawing;
    const [result, history] = await Promise.all([getJson(path), getJson(`${path}?versions=all`).catch(() => null)]);
    const timeline = await loadTimeline(callId, result);
    if (mine !== drawing) return;
    shown = result;
    replace(view, callPage(result, history, timeline, message, path, draw));
  };
  await draw();

  // Another reviewer's correction, a judge's answer or the end of an open call: show the new version.
  return onResult((row) => {
    if (shown && row.call_id === callId && (row.version > shown.version || (row.final && !shown.final))) {
      draw(`Updated to version ${row.version}.`);
    }
  });
}

function callPage(result, history, timeline, message, path, draw) {
  const onCorrect = (item) => correctTurn(path, item, draw);
  return h("div", { class: "page call-page", "data-call": result.call_id, "data-version": result.version },
    header(result),
    message ? notice(message, "success") : null,
    result.final ? null : notice("Call in progress: these scores are provisional, from the events so far.", "warn"),
    h("div", { class: "call-columns" },
      section("Timeline", timelineView(timeline, { onCorrect: result.final ? onCorrect : null })),
      h("div", { class: "call-side" },
        section("Metric judges", metricsView(result.metrics)),
        section("Post-call sentiment", sentimentForm(path, result, draw)),
        section("Cohorts", cohortsView(result.cohorts)),
        section("Evaluation signals", signalsView(result.evaluation || {})),
        section("Version history", versionsView(history?.versions, result.version)))));
}

function header(result) {
  const facts = [
    ["Agent", result.agent_id], ["Run", result.run_id ? h("a", { href: href("runs", result.run_id) }, result.run_id) : null],
    ["Scenario", result.evaluation?.scenario_name], ["Ended", result.ended_ts_ms ? time(result.ended_ts_ms) : null],
  ].filter(([, value]) => value);
  return h("div", { class: "page-head" },
    h("div", {},
      h("div", { class: "crumbs" }, h("a", { href: href("calls") }, "Calls"), " / "),
      h("h1", { class: "mono" }, result.call_id,
        h("span", { class: "version-badge", "data-version-badge": result.version }, `v${result.version}`),
        result.final ? null : h("span", { class: "provisional" }, "provisional"))),
    h("dl", { class: "facts" }, facts.map(([label, value]) => [h("dt", {}, label), h("dd", {}, value)])));
}

function correctTurn(path, item, reload) {
  const turn = document.querySelector(`[data-turn="${item.turn_index}"]`);
  if (!turn || turn.querySelector("form")) return;
  const input = h("textarea", { rows: 3, name: "text", "aria-label": "Corrected transcript" });
  input.value = item.corrected_text || item.text;
  const error = h("p", { class: "error", hidden: true });
  const form = h("form", {
    class: "correction",
    onsubmit: async (event) => {
      event.preventDefault();
      form.querySelector("button[type=submit]").disabled = true;
      try {
        const answer = await postJson(`${path}/corrections`, { turn_index: item.turn_index, text: input.value.trim(), original: item.text });
        reload(answer.version === null ? "Correction sent; the re-score has not come back yet." : `Transcript corrected: now version ${answer.version}.`);
      } catch (e) {
        error.hidden = false; error.textContent = e.message;
        form.querySelector("button[type=submit]").disabled = false;
      }
    },
  }, input, error, h("div", { class: "buttons" },
    h("button", { type: "submit", class: "primary" }, "Save correction"),
    h("button", { type: "button", onclick: () => form.remove() }, "Cancel")));
  turn.append(form);
  input.focus();
}

function sentimentForm(path, result, reload) {
  const current = result.metrics.find((m) => m.metric === "sentiment");
  const select = h("select", { name: "user_sentiment", "aria-label": "Sentiment" }, SENTIMENTS.map((s) => h("option", { value: s }, s)));
  const error = h("p", { class: "error", hidden: true });
  const form = h("form", {
    class: "inline-form",
    onsubmit: async (event) => {
      event.preventDefault();
      try {
        const answer = await postJson(`${path}/annotations`, { user_sentiment: select.value });
        reload(answer.version === null ? "Sentiment sent; the re-score has not come back yet." : `Sentiment set: now version ${answer.version}.`);
      } catch (e) {
        error.hidden = false; error.textContent = e.message;
      }
    },
  }, select, h("button", { type: "submit", disabled: !result.final }, "Set sentiment"), error);
  const named = SENTIMENTS.find((name) => SENTIMENT_SCORES[name] === current?.value);
  const now = current?.passed === null ? (current.details.reason || "not set") : `${named || "set"} (score ${current?.score})`;
  return h("div", {}, h("p", { class: "muted small" }, `Now: ${now}`), form);
}
