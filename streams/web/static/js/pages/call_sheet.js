// The QA sheet beside the timeline: each metric's score, verdict and details; the cohorts' weighted
// scores; the evaluation signals; the version history.

import { scoreBar } from "../charts.js";
import { h, metricLabel, num, pct, table, time, verdictBadge } from "../dom.js";

export function metricsView(metrics) {
  return h("ul", { class: "sheet" }, metrics.map((m) => {
    const details = { ...m.details };
    const threshold = details.threshold;
    const reason = details.reason;
    delete details.threshold; delete details.reason;
    return h("li", { class: "sheet-row", "data-metric": m.metric, "data-verdict": verdictWord(m.passed) },
      h("div", { class: "sheet-main" },
        h("span", { class: "sheet-label" }, metricLabel(m.metric)),
        verdictBadge(m.passed, reason),
        h("span", { class: "sheet-score", "data-score": m.score ?? "" }, m.score === null ? "–" : num(m.score)),
        scoreBar(m.score, threshold)),
      reason ? h("div", { class: "sheet-reason" }, reason) : null,
      h("details", { class: "sheet-details" },
        h("summary", {}, `value ${m.value === null ? "–" : num(m.value, 2)} · pass at ${threshold ?? "–"}`),
        h("pre", { class: "code" }, JSON.stringify(details, null, 2))));
  }));
}

export function verdictWord(passed) {
  return passed === true ? "pass" : passed === false ? "fail" : "na";
}

export function cohortsView(cohorts) {
  if (!cohorts.length) return h("p", { class: "muted" }, "No cohort scores this call.");
  return table(["Cohort", "Weighted score", "Verdict", "Metrics counted"], cohorts.map((c) => h("tr", { "data-cohort": c.cohort_id },
    h("td", {}, c.cohort_id), h("td", {}, c.weighted_score === null ? "–" : num(c.weighted_score)),
    h("td", {}, verdictBadge(c.passed)), h("td", { class: "small" }, c.metrics_counted.map(metricLabel).join(", ")))));
}

// The harness signals a QA lead reads first; the full metrics.json is one click away.
const SIGNALS = [
  ["is_successful", "Successful"], ["is_task_successful", "Task successful"], ["clean_exit", "Clean exit"],
  ["is_action_match", "Action-list match"], ["db_state_match", "DB-state match"],
  ["db_state_assertion_pass_rate", "DB-state assertions"], ["stop_reason", "Stop reason"],
  ["conversation_end_reason", "End reason"], ["total_turns", "Turns"], ["duration_seconds", "Duration (s)"],
];

export function signalsView(evaluation) {
  const rows = SIGNALS.filter(([key]) => key in evaluation).map(([key, label]) => {
    const value = evaluation[key];
    const shown = typeof value === "boolean" ? verdictBadge(value) : value === null ? verdictBadge(null)
      : key.endsWith("_rate") ? pct(value) : String(value);
    return h("tr", { "data-signal": key }, h("th", {}, label), h("td", {}, shown));
  });
  const latency = evaluation.latency_stats;
  if (latency) rows.push(h("tr", {}, h("th", {}, "Latency p50 / p95"), h("td", {}, `${num(latency.p50_ms)} / ${num(latency.p95_ms)} ms`)));
  return h("div", {},
    h("table", { class: "kv" }, h("tbody", {}, rows)),
    h("details", {}, h("summary", {}, "metrics.json"), h("pre", { class: "code" }, JSON.stringify(withoutTurns(evaluation), null, 2))));
}

function withoutTurns(evaluation) {
  const { turns, latencies, ...rest } = evaluation;
  return rest;
}

const CAUSES = { end: "call ended", annotation: "annotated", correction: "transcript corrected", judge: "LLM judge", db_state: "DB state", rescore: "re-scored" };

export function versionsView(versions, current) {
  if (!versions) return h("p", { class: "muted" }, "Version history unavailable.");
  return h("ol", { class: "versions", reversed: true }, versions.slice().reverse().map((v) => h("li", { "data-version": v.version, class: v.version === current ? "current" : "" },
    h("div", {}, h("strong", {}, `v${v.version}`), " · ", CAUSES[v.cause] || v.cause, " · ",
      h("span", { class: "muted" }, time(v.result?.event_ts_ms))),
    v.changes?.length ? h("ul", { class: "changes" }, v.changes.map((c) => h("li", {},
      `${metricLabel(c.name)}: ${change(c.before)} → ${change(c.after)}`))) : null)));
}

function change(side) {
  if (side === null || typeof side !== "object") return String(side);
  const verdict = "passed" in side ? verdictWord(side.passed) : "";
  const score = side.score ?? side.weighted_score;
  return score === undefined ? verdict || JSON.stringify(side) : `${score === null ? "–" : num(score)} ${verdict}`.trim();
}
