// Overview: each metric's pass rate and volume over time, for everything, one agent or one cohort,
// over 1 h / 24 h / 7 d; the alerts pending and firing; the latest failing calls.

import { getJson } from "../api.js";
import { passRateChart } from "../charts.js";
import { callLink, h, metricLabel, notice, num, pct, replace, section, table, time } from "../dom.js";
import { onResult } from "../live.js";
import { href, navigate } from "../route.js";

const RANGES = { "1h": 3600000, "24h": 86400000, "7d": 7 * 86400000 };
const STEPS = { "1h": 60, "24h": 900, "7d": 3 * 3600 };
const REFRESH_MS = 2000; // results come in bursts: one redraw per burst

export async function renderOverview(view, route) {
  const range = RANGES[route.query.get("range")] ? route.query.get("range") : "24h";
  const scope = route.query.get("scope") || "all";
  const [catalog, cohorts, recent] = await Promise.all([
    getJson("/qa/metrics"), getJson("/cohorts"), getJson("/calls?limit=500"),
  ]);
  const thresholds = Object.fromEntries(catalog.metrics.map((m) => [m.metric, m.default_threshold]));
  const agents = [...new Set(recent.calls.map((c) => c.agent_id).filter(Boolean))].sort();
  const cohortIds = [...new Set([...cohorts.cohorts.map((c) => c.cohort_id), ...recent.calls.flatMap((c) => c.cohort_ids)])].sort();

  const body = h("div", { class: "overview-body" });
  replace(view, h("div", { class: "page" },
    h("div", { class: "page-head" },
      h("h1", {}, "Overview"),
      controls(range, scope, agents, cohortIds)),
    body));

  const draw = async () => replace(body, ...(await overviewBody(range, scope, thresholds)));
  await draw();
  let timer = null;
  return onResult(() => {
    clearTimeout(timer);
    timer = setTimeout(draw, REFRESH_MS);
  });
}

function controls(range, scope, agents, cohortIds) {
  const select = h("select", {
    "aria-label": "Scope", id: "scope-select",
    onchange: (e) => navigate("", null, { range, scope: e.target.value }),
  },
  h("option", { value: "all" }, "All calls"),
  agents.length ? h("optgroup", { label: "Agent" }, agents.map((a) => h("option", { value: `agent:${a}` }, a))) : null,
  cohortIds.length ? h("optgroup", { label: "Cohort" }, cohortIds.map((c) => h("option", { value: `cohort:${c}` }, c))) : null);
  select.value = scope;
  return h("div", { class: "controls" }, select,
    h("div", { class: "segmented", role: "group", "aria-label": "Time range" },
      Object.keys(RANGES).map((name) => h("a", {
        href: href("", null, { range: name, scope }), class: name === range ? "active" : "", "data-range": name,
      }, name))));
}

async function timeseries(range, scope) {
  // Without from/to the API answers the 24 h up to the newest result: history recorded last year
  // charts as well as today's. Other ranges end at that same newest time.
  const scopeQ = `scope=${encodeURIComponent(scope)}`;
  const latest = await getJson(`/timeseries?${scopeQ}&step=${STEPS["24h"]}`);
  if (range === "24h") return latest;
  const to = latest.to_ms, from = Math.max(0, to - RANGES[range]); // (an empty index ends at 1970)
  return getJson(`/timeseries?${scopeQ}&from=${from}&to=${to}&step=${STEPS[range]}`);
}

async function overviewBody(range, scope, thresholds) {
  const [series, failing, alerts] = await Promise.all([
    timeseries(range, scope), getJson(`/calls?${scopeFilter(scope)}verdict=fail&limit=10`), alertsNow(),
  ]);
  const metrics = series.series.map((s) => ({ ...s, ...totals(s.buckets) }));
  const applied = metrics.reduce((sum, m) => sum + m.applied, 0);
  const passed = metrics.reduce((sum, m) => sum + m.passed, 0);
  return [
    h("div", { class: "tiles" },
      tile("Calls", num(series.totals.calls),
        series.totals.calls ? `${time(series.from_ms)} – ${time(series.to_ms)}` : "none scored in this range yet", "calls"),
      tile("Metric verdicts passed", pct(applied ? passed / applied : null), `${num(passed)} of ${num(applied)}`, "passed"),
      tile("Alerts firing", num(alerts.firing.length), alerts.firing.length ? "see Alerts" : "none", "firing")),
    alertsSection(alerts),
    section(`Pass rate and volume by metric (${range})`,
      h("div", { class: "metric-grid" }, metrics.map((m) => metricCard(m, series, thresholds[m.metric])))),
    section("Latest failing calls", failingTable(failing.calls)),
  ];
}

function scopeFilter(scope) {
  if (scope.startsWith("agent:")) return `agent_id=${encodeURIComponent(scope.slice(6))}&`;
  if (scope.startsWith("cohort:")) return `cohort_id=${encodeURIComponent(scope.slice(7))}&`;
  return "";
}

function totals(buckets) {
  const applied = buckets.reduce((sum, b) => sum + b.applied, 0);
  const passed = buckets.reduce((sum, b) => sum + b.passed, 0);
  return { applied, passed, rate: applied ? passed / applied : null };
}

function tile(label, value, note, key) {
  return h("div", { class: "tile", "data-tile": key },
    h("div", { class: "tile-label" }, label), h("div", { class: "tile-value" }, value), h("div", { class: "tile-note" }, note));
}

function metricCard(m, series, threshold) {
  const mark = threshold === undefined ? undefined : threshold / 100;
  return h("article", { class: "metric-card", "data-metric": m.metric },
    h("header", {},
      h("h3", {}, metricLabel(m.metric)),
      h("span", { class: "rate", "data-rate": m.rate ?? "" }, pct(m.rate))),
    h("div", { class: "metric-sub" },
      h("span", { "data-applied": m.applied }, `${num(m.applied)} scored`),
      h("span", { "data-passed": m.passed }, `${num(m.passed)} passed`),
      h("a", { href: href("calls", null, { metric: m.metric, verdict: "fail" }) }, "failing calls →")),
    passRateChart(m.buckets, { fromMs: series.from_ms, toMs: series.to_ms, stepMs: series.step_s * 1000, threshold: mark }));
}

async function alertsNow() {
  try {
    const firing = await getJson("/alerts");
    let pending = [];
    try {
      const { episodes } = await getJson("/alerts/episodes?state=pending");
      // (An episode's figures are its latest transition's.)
      pending = episodes.map((e) => ({ ...(e.transitions || [])[0], ...e }));
    } catch { /* a worker without the episodes route lists firing alerts only */ }
    return { firing: firing.firing || [], pending, error: null };
  } catch (error) {
    return { firing: [], pending: [], error: error.message };
  }
}

function alertsSection(alerts) {
  if (alerts.error) return section("Alerts", notice(`Alerts are not available: ${alerts.error}`, "info"));
  const rows = [...alerts.firing.map((a) => ["firing", a]), ...alerts.pending.map((a) => ["pending", a])];
  if (!rows.length) return section("Alerts", h("p", { class: "muted" }, "No alert pending or firing."));
  return section("Alerts pending and firing", table(["State", "Rule", "Scope", "Metric", "Pass rate", "Severity"],
    rows.map(([state, a]) => h("tr", { class: `alert-${state}` },
      h("td", {}, h("span", { class: `state ${state}` }, state)),
      h("td", {}, h("a", { href: href("alerts") }, a.rule)), h("td", {}, a.scope), h("td", {}, metricLabel(a.metric)),
      h("td", {}, a.pass_rate === undefined ? "–" : `${pct(a.pass_rate)} (${a.passed}/${a.total})`),
      h("td", {}, h("span", { class: `severity ${a.severity}` }, a.severity))))));
}

export function failingTable(calls) {
  if (!calls.length) return h("p", { class: "muted" }, "No failing call in this scope.");
  return table(["Call", "Ended", "Agent", "Failed", "Version"], calls.map((c) => h("tr", { "data-call": c.call_id },
    h("td", {}, callLink(c.call_id)), h("td", {}, time(c.time_ms)), h("td", {}, c.agent_id || "–"),
    h("td", {}, h("span", { class: "chips" }, (c.failed || []).map((m) => h("span", { class: "chip fail" }, metricLabel(m))))),
    h("td", {}, `v${c.version}`))), { class: "grid calls-table" });
}

