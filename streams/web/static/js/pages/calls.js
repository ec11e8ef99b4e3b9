// Calls: the scored calls, newest first, filtered as `GET /calls` filters them; a call id opens its page.

import { getJson } from "../api.js";
import { callLink, h, metricLabel, replace, table, time } from "../dom.js";
import { navigate } from "../route.js";

const FILTERS = ["agent_id", "cohort_id", "run_id", "metric", "verdict"];
const PAGE_SIZE = 50;

export async function renderCalls(view, route) {
  const filters = new URLSearchParams();
  for (const name of FILTERS) if (route.query.get(name)) filters.set(name, route.query.get(name));
  const { metrics } = await getJson("/qa/metrics");

  const rows = h("tbody");
  const more = h("button", { class: "more" }, "Load more");
  const grid = h("table", { class: "grid calls-table" },
    h("thead", {}, h("tr", {}, ["Call", "Ended", "Agent", "Run", "Failed", "n/a", "Version"].map((t) => h("th", {}, t)))), rows);
  replace(view, h("div", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Calls"), filterForm(filters, metrics)),
    h("section", { class: "card" }, grid, more)));

  let cursor = null;
  const load = async () => {
    more.disabled = true; // (one page at a time: a second click would ask for the same page again)
    const query = new URLSearchParams(filters);
    query.set("limit", PAGE_SIZE);
    if (cursor) query.set("cursor", cursor);
    const page = await getJson(`/calls?${query}`);
    rows.append(...page.calls.map(callRow));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    more.disabled = false;
    if (!rows.children.length) rows.append(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No call matches.")));
  };
  more.addEventListener("click", load);
  await load();
}

function callRow(c) {
  return h("tr", { "data-call": c.call_id },
    h("td", {}, callLink(c.call_id)), h("td", {}, time(c.time_ms)), h("td", {}, c.agent_id || "–"), h("td", {}, c.run_id || "–"),
    h("td", {}, h("span", { class: "chips" }, (c.failed || []).map((m) => h("span", { class: "chip fail" }, metricLabel(m))))),
    h("td", { class: "muted small" }, (c.na || []).length), h("td", {}, `v${c.version}`));
}

function filterForm(filters, metrics) {
  const field = (name, placeholder) => h("input", { name, placeholder, value: filters.get(name) || "", size: 14 });
  const metric = h("select", { name: "metric" }, h("option", { value: "" }, "any metric"),
    metrics.map((m) => h("option", { value: m.metric }, metricLabel(m.metric))));
  metric.value = filters.get("metric") || "";
  const verdict = h("select", { name: "verdict" }, ["", "fail", "pass", "na"].map((v) => h("option", { value: v }, v || "any verdict")));
  verdict.value = filters.get("verdict") || "";
  const form = h("form", {
    class: "controls",
    onsubmit: (event) => {
      event.preventDefault();
      const query = new URLSearchParams();
      for (const [name, value] of new FormData(form)) if (value) query.set(name, value);
      navigate("calls", null, query);
    },
  }, field("agent_id", "agent"), field("cohort_id", "cohort"), field("run_id", "run"), metric, verdict, h("button", { type: "submit" }, "Filter"));
  return form;
}
