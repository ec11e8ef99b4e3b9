// The page's router: `#/<page>/<id>?<query>` picks a page module, which renders into <main>.

import { h, notice, replace } from "./dom.js";
import { startLive } from "./live.js";
import { parseRoute } from "./route.js";
import { renderOverview } from "./pages/overview.js";
import { renderCall } from "./pages/call.js";
import { renderCalls } from "./pages/calls.js";
import { renderInProgress } from "./pages/in_progress.js";
import { renderRuns } from "./pages/runs.js";
import { renderAlerts } from "./pages/alerts.js";

const PAGES = {
  "": ["overview", renderOverview],
  calls: ["calls", (view, route) => (route.id ? renderCall(view, route) : renderCalls(view, route))],
  live: ["live", renderInProgress],
  runs: ["runs", renderRuns],
  alerts: ["alerts", renderAlerts],
};

let cleanup = null; // what the page before asked to stop (its live listeners)
let visits = 0;

async function render() {
  const visit = ++visits;
  const route = parseRoute(location.hash);
  const [tab, page] = PAGES[route.page] || [];
  for (const link of document.querySelectorAll(".tabs a")) {
    link.classList.toggle("active", link.dataset.tab === tab);
  }
  if (cleanup) { cleanup(); cleanup = null; }
  const view = document.getElementById("view");
  if (!page) {
    replace(view, notice(`No page "${route.page}".`, "error"));
    return;
  }
  // Each visit draws into its own slot: a draw of the page before that finishes late (a live
  // update on its way) lands in a detached slot instead of over this page.
  const slot = h("div", { class: "slot" });
  view.replaceChildren(slot);
  view.setAttribute("aria-busy", "true");
  try {
    const stop = (await page(slot, route)) || null;
    if (visit === visits) cleanup = stop;
    else if (stop) stop(); // left while loading
  } catch (error) {
    replace(slot, h("div", { class: "page" }, notice(`Could not load this page: ${error.message}`, "error")));
  } finally {
    view.removeAttribute("aria-busy");
  }
}

window.addEventListener("hashchange", render);
startLive(document.getElementById("live-status"));
render();
