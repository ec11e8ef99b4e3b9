// Runs: an evaluation run's summary with the numbers of its all_summary.txt, per domain, each scenario
// linked to its call; and two runs side by side, scenario by scenario, as `callqa compare` reads them.

import { getJson } from "../api.js";
import { h, metricLabel, notice, num, replace, section, table, verdictBadge } from "../dom.js";
import { href, navigate } from "../route.js";
import { scenarioRows } from "./run_scenarios.js";

// all_summary.txt's labels and what each rate counts, in its order (scorers/runs/harness_text.py).
export const RATE_LABELS = [
  ["success_rate", "Overall Success Rate", "scenarios — strict conjunction across all applicable signals"],
  ["task_success_rate", "Task Success Rate (excl. clean_exit)", "scenarios"],
  ["action_match_rate", "Action-list match", "scenarios"], ["db_state_success_rate", "DB-State match", "scenarios"],
  ["db_state_assertion_success_rate", "DB-State-Assertion pass", "predicates"],
  ["nl_assertion_success_rate", "NL-Assertion pass", "assertions"],
  ["judge_pass_rate", "Judge passed (>= threshold)", "scenarios"], ["clean_exit_rate", "Clean exit", "scenarios"],
];

// Overall Latency Statistics as all_summary.txt labels them.
const LATENCY_FIELDS = [["count", "Total Measurements"], ["mean_ms", "Mean"], ["p50_ms", "P50"], ["p95_ms", "P95"],
  ["min_ms", "Min"], ["max_ms", "Max"]];

// As all_summary.txt prints a latency figure: the count whole, milliseconds with one decimal.
function figure(field, value) {
  return field === "count" ? String(value) : `${Number(value).toFixed(1)}ms`;
}

// As all_summary.txt prints a rate: two decimals, then passed/total.
export function rateText(rate, counted) {
  const of = counted ? ` ${counted}` : "";
  return rate ? `${(100 * rate.passed / rate.total).toFixed(2)}% (${rate.passed}/${rate.total}${of})` : "–";
}

export async function renderRuns(view, route) {
  const { runs } = await getJson("/runs");
  const ids = Object.keys(runs).sort().reverse();
  if (!route.id) {
    replace(view, h("div", { class: "page" }, h("div", { class: "page-head" }, h("h1", {}, "Runs")),
      section("Evaluation runs", ids.length ? table(["Run", "Scenarios"], ids.map((id) => h("tr", { "data-run": id },
        h("td", {}, h("a", { href: href("runs", id) }, id)), h("td", {}, num(runs[id]))))) : h("p", { class: "muted" }, "No run scored yet."))));
    return;
  }
  const other = route.query.get("vs");
  const picker = h("select", { "aria-label": "Compare with", onchange: (e) => navigate("runs", route.id, e.target.value ? { vs: e.target.value } : null) },
    h("option", { value: "" }, "Compare with…"), ids.filter((id) => id !== route.id).map((id) => h("option", { value: id }, id)));
  picker.value = other || "";
  const head = h("div", { class: "page-head" },
    h("div", {}, h("div", { class: "crumbs" }, h("a", { href: href("runs") }, "Runs"), " / "), h("h1", { class: "mono" }, route.id)),
    h("div", { class: "controls" }, picker, h("a", { class: "button", href: `/runs/${encodeURIComponent(route.id)}/summary.txt`, target: "_blank" }, "all_summary.txt")));
  const body = other ? await comparison(route.id, other) : await oneRun(route.id);
  replace(view, h("div", { class: "page" }, head, ...body));
}

async function oneRun(runId) {
  const [summary, scenarios] = await Promise.all([getJson(`/runs/${encodeURIComponent(runId)}/summary`), scenarioRows(runId)]);
  const rates = RATE_LABELS.filter(([name]) => summary[name]).map(([name, label, counted]) =>
    h("tr", { "data-rate": name }, h("th", {}, label), h("td", { class: "mono" }, rateText(summary[name], counted))));
  if (summary.judge_score_mean) {
    const { mean, count } = summary.judge_score_mean;
    rates.push(h("tr", {}, h("th", {}, "Judge score mean"), h("td", { class: "mono" }, `${mean.toFixed(3)} (across ${count} scenarios)`)));
  }
  const latency = summary.overall_latency_stats;
  return [
    h("div", { class: "tiles" },
      tile("Total Scenarios", num(summary.scenarios)), tile("Overall Success Rate", rateText(summary.success_rate)),
      tile("Latency p50 / p95", `${num(latency.p50_ms)} / ${num(latency.p95_ms)} ms`)),
    h("div", { class: "two-col" },
      section("Evaluation summary", h("table", { class: "kv", "data-summary": runId }, h("tbody", {}, rates))),
      section("Overall latency", h("table", { class: "kv" }, h("tbody", {},
        LATENCY_FIELDS.map(([f, label]) => h("tr", { "data-latency": f }, h("th", {}, label), h("td", { class: "mono" }, figure(f, latency[f])))))))),
    summary.stall_warning ? notice(`${summary.stall_warning.scenarios.length} scenario(s) had too few agent turns and were counted as failures: ${summary.stall_warning.scenarios.join(", ")}`, "warn") : null,
    ...Object.entries(summary.domains || {}).map(([domain, d]) => domainSection(domain, d, scenarios.filter((s) => s.domain === domain))),
  ];
}

// The per-domain rates all_summary.txt prints, under its "Per-Domain …:" headings.
const DOMAIN_RATE_LABELS = [
  ["success_rate", "Success Rate"], ["task_success_rate", "Task Success Rate (excl. clean_exit)"],
  ["db_state_success_rate", "DB-State Match Rate"], ["nl_assertion_success_rate", "NL-Assertion Pass Rate"],
  ["db_state_assertion_success_rate", "DB-State-Assertion Pass Rate"],
];

function domainSection(domain, d, scenarios) {
  const rates = DOMAIN_RATE_LABELS.filter(([name]) => d[name]).map(([name, label]) => h("span", { class: "rate-chip", "data-rate": name }, `${label}: `, h("strong", {}, rateText(d[name]))));
  return h("section", { class: "card", "data-domain": domain },
    h("h2", {}, `${domain} `, h("span", { class: "muted" }, `(${d.scenarios} scenarios)`)),
    h("div", { class: "rate-chips" }, rates),
    table(["Scenario", "Successful", "Failed metrics", "Call"], scenarios.map((s) => h("tr", { "data-scenario": s.scenario },
      h("td", {}, h("a", { href: href("calls", s.call_id), class: "mono" }, s.scenario)), h("td", {}, verdictBadge(s.is_successful)),
      h("td", { class: "small" }, (s.failed || []).map(metricLabel).join(", ") || "–"),
      h("td", {}, h("a", { href: href("calls", s.call_id), class: "mono" }, s.call_id))))));
}

async function comparison(before, after) {
  const [a, b, sa, sb] = await Promise.all([
    getJson(`/runs/${encodeURIComponent(before)}/summary`), getJson(`/runs/${encodeURIComponent(after)}/summary`),
    scenarioRows(before), scenarioRows(after)]);
  const rates = RATE_LABELS.filter(([name]) => a[name] || b[name]).map(([name, label]) => h("tr", { "data-rate": name },
    h("th", {}, label), h("td", { class: "mono" }, rateText(a[name])), h("td", { class: "mono" }, rateText(b[name])), h("td", {}, delta(a[name], b[name]))));
  const byName = new Map(sb.map((s) => [s.scenario, s]));
  const changed = sa.filter((s) => byName.has(s.scenario) && byName.get(s.scenario).is_successful !== s.is_successful);
  const regressions = changed.filter((s) => s.is_successful === true);
  return [
    section("Side by side", table(["", before, after, "Change"], rates, { "data-compare": "" })),
    section(`Scenarios that changed (${changed.length}; ${regressions.length} passed before and fail now)`,
      changed.length ? table(["Scenario", before, after], changed.map((s) => h("tr", { class: s.is_successful ? "regression" : "", "data-scenario": s.scenario },
        h("td", { class: "mono" }, s.scenario),
        h("td", {}, h("a", { href: href("calls", s.call_id) }, verdictBadge(s.is_successful))),
        h("td", {}, h("a", { href: href("calls", byName.get(s.scenario).call_id) }, verdictBadge(byName.get(s.scenario).is_successful))))),
      { "data-changed": "" })
        : h("p", { class: "muted" }, "No scenario changed its verdict.")),
  ];
}

function delta(a, b) {
  if (!a || !b) return "–";
  const points = 100 * (b.passed / b.total - a.passed / a.total);
  return h("span", { class: points < 0 ? "down" : points > 0 ? "up" : "" }, `${points > 0 ? "+" : ""}${points.toFixed(2)} pts`);
}

function tile(label, value) {
  return h("div", { class: "tile" }, h("div", { class: "tile-label" }, label), h("div", { class: "tile-value small-value" }, value));
}
