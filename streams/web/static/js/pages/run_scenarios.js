// A run's scenarios: one row per call of the run, with its scenario, domain and success.
//
// `/calls?run_id=` rows carry scenario, domain and is_successful where the worker adds them; else
// each call's result is read for them (slower, a few at a time).

import { getJson } from "../api.js";

const PAGE = 500;
const AT_ONCE = 8;

export async function scenarioRows(runId) {
  const rows = [];
  let cursor = null;
  do {
    const query = new URLSearchParams({ run_id: runId, limit: PAGE });
    if (cursor) query.set("cursor", cursor);
    const page = await getJson(`/calls?${query}`);
    rows.push(...page.calls);
    cursor = page.next_cursor;
  } while (cursor);
  const missing = rows.filter((row) => row.scenario === undefined);
  for (let i = 0; i < missing.length; i += AT_ONCE) {
    await Promise.all(missing.slice(i, i + AT_ONCE).map(async (row) => {
      const evaluation = (await getJson(`/calls/${encodeURIComponent(row.call_id)}`)).evaluation || {};
      row.scenario = evaluation.scenario_name ?? row.call_id;
      row.is_successful = evaluation.is_successful ?? null;
    }));
  }
  for (const row of rows) row.domain = row.domain ?? domainOf(row.scenario);
  return rows.sort((a, b) => String(a.scenario).localeCompare(String(b.scenario)));
}

// The harness names a scenario `<domain>__<name>`; a run summary groups by that domain.
function domainOf(scenario) {
  const cut = String(scenario).indexOf("__");
  return cut > 0 ? scenario.slice(0, cut) : "";
}
