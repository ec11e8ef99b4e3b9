// Alerts: the rules in force, and each episode (pending → firing → resolved) with the calls that drove it.

import { getJson } from "../api.js";
import { callLink, h, metricLabel, notice, pct, replace, section, table, time } from "../dom.js";
import { onResult } from "../live.js";

export async function renderAlerts(view) {
  const body = h("div");
  replace(view, h("div", { class: "page" }, h("div", { class: "page-head" }, h("h1", {}, "Alerts")), body));
  const draw = async () => replace(body, ...(await alertsBody()));
  await draw();
  let timer = null;
  return onResult(() => { clearTimeout(timer); timer = setTimeout(draw, 2000); });
}

async function alertsBody() {
  let rules, now;
  try {
    [rules, now] = await Promise.all([getJson("/alerts/rules"), getJson("/alerts")]);
  } catch (error) {
    return [notice(`Alerts are not available: ${error.message}`, "warn")];
  }
  const episodes = await getJson("/alerts/episodes").then((e) => e.episodes).catch(() => null);
  return [
    section("Rules in force", rulesTable(rules.rules)),
    episodes ? section("Episodes", episodesView(episodes)) : section("Firing now", firingView(now.firing || [])),
  ];
}

function rulesTable(rules) {
  if (!rules.length) return h("p", { class: "muted" }, "No alert rule is in force.");
  return table(["Rule", "Scope", "Metric", "Window", "Fires below", "Clears above", "Min calls", "For", "Severity"],
    rules.map((r) => h("tr", { "data-rule": r.name },
      h("td", {}, h("strong", {}, r.name)), h("td", { class: "mono" }, r.scope), h("td", {}, metricLabel(r.metric)),
      h("td", {}, duration(r.window_s)), h("td", {}, pct(r.fire_below, 0)), h("td", {}, pct(r.clear_above, 0)),
      h("td", {}, r.min_calls), h("td", {}, duration(r.for_s || 0)), h("td", {}, h("span", { class: `severity ${r.severity}` }, r.severity)))));
}

function episodesView(episodes) {
  if (!episodes.length) return h("p", { class: "muted" }, "No episode yet.");
  return h("div", { class: "episodes" }, episodes.map((e) => h("article", { class: `episode ${e.state}`, "data-episode": e.dedupe_key },
    h("header", {}, h("span", { class: `state ${e.state}` }, e.state), h("strong", {}, e.rule), h("span", { class: "mono" }, e.scope),
      h("span", {}, metricLabel(e.metric)), h("span", { class: `severity ${e.severity}` }, e.severity)),
    h("ol", { class: "transitions" }, (e.transitions || []).map((t) => h("li", {},
      h("span", { class: `state ${t.state}` }, t.state), ` ${time(t.event_ts_ms)} · pass rate ${pct(t.pass_rate)} (${t.passed}/${t.total})`))),
    callsDriving(e.sample_call_ids))));
}

function firingView(firing) {
  if (!firing.length) return h("p", { class: "muted" }, "No alert is firing.");
  return h("div", { class: "episodes" }, firing.map((a) => h("article", { class: "episode firing", "data-episode": a.dedupe_key },
    h("header", {}, h("span", { class: "state firing" }, "firing"), h("strong", {}, a.rule), h("span", { class: "mono" }, a.scope),
      h("span", {}, metricLabel(a.metric)), h("span", { class: `severity ${a.severity}` }, a.severity)),
    h("p", {}, `Pending since ${time(a.episode_start_ms)}; pass rate ${pct(a.pass_rate)} (${a.passed}/${a.total}) in ${duration(a.window_s)}. ${a.reason || ""}`),
    callsDriving(a.sample_call_ids))));
}

function callsDriving(ids) {
  if (!ids || !ids.length) return null;
  return h("div", { class: "driving" }, h("span", { class: "muted small" }, "Calls that drove it: "),
    ids.map((id, i) => [i ? ", " : "", callLink(id)]));
}

function duration(seconds) {
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds >= 60 && seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}
