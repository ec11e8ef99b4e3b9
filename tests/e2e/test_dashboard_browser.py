"""The web UI in a real headless browser (Debian's chromium, driven by Playwright for Python) against a
real worker that scored the sample log through the embedded broker: the numbers the page shows are the
API's and replay's, a failing call's page shows its transcript and verdicts, and a transcript
correction posted from the page comes back as the next version.

Screenshots go to `DASHBOARD_SCREENSHOT_DIR` when set (docs/images/ for the guide), else under the test's
temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from streams.config import Settings
from streams.wiring import cohort_book
from tests.helpers.livekit import collect_results, latest_by_call, replay_results, send, settings_for, start_worker
from tests.helpers.paths import REPO

pytestmark = pytest.mark.broker

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SAMPLE = str(REPO / "samples" / "calls.jsonl")
COHORTS = str(REPO / "samples" / "cohorts.json")
RULES = str(REPO / "samples" / "alert-rules.toml")
TOKEN = "t0ken-for-the-page"
# The flags a CI container needs: no sandbox (root), no GPU, nothing fetched from the network.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OPEN_LOG_LINES = 400  # the sample's first lines: a few calls ended, most still open
WAIT_MS = 30_000  # how long the browser may take to show what is awaited (a wait, not a measure)


def _browser_or_skip():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(
            "needs Playwright for Python: pip install -e '.[test]' (never `playwright install`: "
            "the test drives Debian's chromium)"
        )
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        pytest.skip(f"needs Debian's chromium at {CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)")
    return sync_playwright


@pytest.fixture(scope="module")
def scored(broker):
    """A worker (asking for a token) that scored the sample log, and replay's latest result per call."""
    _browser_or_skip()
    prefix = f"t-dashboard-{os.getpid()}"
    results, _ = replay_results(SAMPLE, cohorts=cohort_book(Settings(), COHORTS))
    expected = latest_by_call(results)
    worker = start_worker(
        broker,
        prefix,
        env={"CALLQA_API_TOKEN": TOKEN, "CALLQA_COHORTS_FILE": COHORTS, "CALLQA_ALERT_RULES_FILE": RULES},
    )
    try:
        settings = settings_for(broker, prefix)
        with ThreadPoolExecutor(1) as thread:  # (the browser's event loop may already run in this one)
            thread.submit(send, SAMPLE, settings).result()
            thread.submit(collect_results, settings, expected).result()
        yield worker, expected
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    directory = Path(os.environ.get("DASHBOARD_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium, headless, with a fresh profile (Playwright gives each launch its own)."""
    sync_playwright = _browser_or_skip()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@contextmanager
def _signed_in_page(browser, worker, first_shown: str):
    """A new browser session on the worker's page, signed in: the first read meets a 401, and the page
    asks for the token once and keeps it for the session."""
    context = browser.new_context(
        viewport={"width": 1360, "height": 900}, base_url=f"http://127.0.0.1:{worker.web_port}"
    )
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        tab.goto("/")
        tab.locator("#token-input").fill(TOKEN)
        tab.locator("#token-dialog button.primary").click()
        tab.locator(first_shown).first.wait_for()
        yield tab
    finally:
        context.close()
    assert not errors, errors


@pytest.fixture(scope="module")
def page(scored, browser):
    worker, _ = scored
    with _signed_in_page(browser, worker, ".metric-card") as tab:
        yield tab


@pytest.fixture
def open_calls(broker):
    """A worker that holds calls still open: the first events of the sample, sent without an end of input,
    and no idle clock to end them."""
    _browser_or_skip()
    prefix = f"t-dashboard-open-{os.getpid()}"
    worker = start_worker(broker, prefix, env={"CALLQA_API_TOKEN": TOKEN, "CALLQA_IDLE_TICK_S": "0"})
    try:
        head = Path(tempfile.mkdtemp(prefix="callqa-open-")) / "head.jsonl"
        head.write_text("".join(Path(SAMPLE).read_text(encoding="utf-8").splitlines(keepends=True)[:OPEN_LOG_LINES]))
        # (In a thread of its own: the browser's event loop may already run in this one.)
        with ThreadPoolExecutor(1) as thread:
            thread.submit(send, str(head), settings_for(broker, prefix), end_of_input=False).result()
        yield worker
    finally:
        worker.stop()


def _api_text(worker, path: str, body: dict | None = None) -> str:
    """The worker's answer to a GET (or a POST of `body`), with the token."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{worker.web_port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def _api(worker, path: str, body: dict | None = None) -> dict:
    return json.loads(_api_text(worker, path, body))


def _sample_events() -> dict[str, list[dict]]:
    """The sample log's events by call, each once (its malformed lines and duplicates, there on purpose,
    left out)."""
    by_call: dict[str, list[dict]] = {}
    seen: set[str] = set()
    for line in Path(SAMPLE).read_text(encoding="utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        readable = isinstance(event, dict) and isinstance(event.get("call_id"), str)
        if readable and isinstance(event.get("data"), dict) and event.get("event_id") not in seen:
            seen.add(event.get("event_id"))
            by_call.setdefault(event["call_id"], []).append(event)
    return by_call


def _replay_counts(expected: dict[str, dict], agent_id: str | None = None) -> dict[str, tuple[int, int]]:
    """Per metric: (calls it applied to, calls it passed), over every call's latest result (of one agent)."""
    counts: dict[str, list[int]] = {}
    for result in expected.values():
        if agent_id is not None and result["agent_id"] != agent_id:
            continue
        for metric in result["metrics"]:
            applied_passed = counts.setdefault(metric["metric"], [0, 0])
            if metric["passed"] is not None:
                applied_passed[0] += 1
                applied_passed[1] += metric["passed"] is True
    return {name: (applied, passed) for name, (applied, passed) in counts.items()}


def _domain_rates(summary_txt: str, domain: str) -> dict[str, str]:
    """One domain's rates in an all_summary.txt, by the rate's name: the `  <domain>: <rate>` lines under its
    `Per-Domain <name>:` headings."""
    rates, heading = {}, None
    for line in summary_txt.splitlines():
        if line.startswith("Per-Domain ") and line.endswith(":"):
            heading = line[len("Per-Domain ") : -1]
        elif heading and line.startswith(f"  {domain}: "):
            rates[heading] = line[len(f"  {domain}: ") :]
        elif not line.strip() or not line.startswith(("  ", "-")):
            heading = None if not line.startswith("Per-Domain ") else heading
    return rates


def _shown_counts(page) -> dict[str, tuple[int, int]]:
    """Per metric card of the overview: (calls scored, calls passed) as shown."""
    return {
        card.get_attribute("data-metric"): (
            int(card.locator("[data-applied]").get_attribute("data-applied")),
            int(card.locator("[data-passed]").get_attribute("data-passed")),
        )
        for card in page.locator(".metric-card").all()
    }


def test_the_overview_shows_the_api_s_and_replay_s_numbers(scored, page, shots):
    worker, expected = scored
    page.goto("/#/?range=24h")
    page.locator('[data-range="24h"].active').wait_for()
    page.locator(".calls-table tbody tr").first.wait_for()

    series = _api(worker, "/timeseries")
    from_api = {
        s["metric"]: (sum(b["applied"] for b in s["buckets"]), sum(b["passed"] for b in s["buckets"]))
        for s in series["series"]
    }
    assert _shown_counts(page) == from_api == _replay_counts(expected)
    assert (
        page.locator("[data-tile=calls] .tile-value").inner_text()
        == f"{len(expected):,}"
        == f"{series['totals']['calls']:,}"
    )

    # The sample spans less than an hour of event time: the last hour shows all of it too.
    page.locator('[data-range="1h"]').click()
    page.locator('[data-range="1h"].active').wait_for()
    page.locator(".metric-card").first.wait_for()
    assert _shown_counts(page) == _replay_counts(expected)
    page.screenshot(path=str(shots / "overview.png"), full_page=True)

    # One agent's calls.
    agent = sorted({r["agent_id"] for r in expected.values() if r["agent_id"]})[0]
    page.locator("#scope-select").select_option(f"agent:{agent}")
    page.locator(f'[data-range="1h"][href*="{agent}"]').wait_for()
    page.locator(".metric-card").first.wait_for()
    assert _shown_counts(page) == _replay_counts(expected, agent)
    assert all(row.locator("td").nth(2).inner_text() == agent for row in page.locator(".calls-table tbody tr").all())


def test_the_call_list_filters_by_metric_and_verdict_and_pages_on(scored, page):
    _, expected = scored
    failing = {
        c for c, r in expected.items() if any(m["metric"] == "latency" and m["passed"] is False for m in r["metrics"])
    }
    page.goto("/#/calls?metric=latency&verdict=fail")
    rows = page.locator(".calls-table tbody tr[data-call]")
    rows.first.wait_for()
    for _ in range(len(failing) // 50 + 1):  # (50 a page)
        if not page.locator("button.more").is_visible():
            break
        shown = rows.count()
        page.locator("button.more").click()
        rows.nth(shown).wait_for()
    assert {row.get_attribute("data-call") for row in rows.all()} == failing and rows.count() == len(failing)


def test_a_failing_call_s_page_shows_its_transcript_and_verdicts(scored, page, shots):
    _, expected = scored
    page.goto("/#/")
    page.locator(".calls-table tbody tr a").first.click()
    call = page.locator(".call-page")
    call.wait_for()
    result = expected[call.get_attribute("data-call")]
    assert any(m["passed"] is False for m in result["metrics"])

    turns = [text.strip() for text in page.locator(".turn .turn-text").all_inner_texts()]
    assert turns == [turn["text"] for turn in result["evaluation"]["turns"]]
    verdicts = {
        row.get_attribute("data-metric"): row.get_attribute("data-verdict") for row in page.locator(".sheet-row").all()
    }
    words = {True: "pass", False: "fail", None: "na"}
    assert verdicts == {m["metric"]: words[m["passed"]] for m in result["metrics"]}
    # n/a shows its reason beside the empty circle.
    for metric in (m for m in result["metrics"] if m["passed"] is None):
        assert metric["details"]["reason"] in page.locator(f'.sheet-row[data-metric="{metric["metric"]}"]').inner_text()
    overlaps = next(m for m in result["metrics"] if m["metric"] == "overlapping_speech")["value"]
    assert page.locator(".turn .pill.warn").count() == overlaps


def test_the_timeline_shows_the_call_s_tool_calls_transitions_and_word_timings(scored, page, shots):
    _, expected = scored
    events = _sample_events()
    # The call with the most tool calls and transitions: the richest timeline.
    call_id = max(
        expected, key=lambda c: (sum(e["type"] in ("tool.call", "node.transition") for e in events.get(c, [])), c)
    )
    page.goto(f"/#/calls/{call_id}")
    page.locator(f'.call-page[data-call="{call_id}"]').wait_for()
    page.locator(".tl-turn").first.wait_for()

    mine = events[call_id]
    tool_calls = {e["data"].get("tool_call_id") or e["event_id"] for e in mine if e["type"] == "tool.call"}
    assert page.locator(".tl-tool_call").count() == len(tool_calls)
    assert page.locator(".tl-node_transition").count() == sum(e["type"] == "node.transition" for e in mine)
    with_words = [e for e in mine if e["type"] == "turn" and e["data"].get("words")]
    assert page.locator(".turn details.words").count() == len(with_words)
    page.screenshot(path=str(shots / "call.png"), full_page=True)


def test_a_transcript_correction_from_the_page_comes_back_as_the_next_version(scored, page, shots):
    worker, _ = scored
    page.goto("/#/")
    page.locator(".calls-table tbody tr a").first.click()
    call = page.locator(".call-page")
    call.wait_for()
    call_id, version = call.get_attribute("data-call"), int(call.get_attribute("data-version"))

    user_turn = page.locator(".turn.user").first
    user_turn.get_by_role("button", name="Correct transcript").click()
    # What the reviewer heard: the first figures said otherwise (speech to text often mishears them).
    original = user_turn.locator(".turn-text").inner_text()
    corrected = re.sub(r"\d", lambda digit: str((int(digit[0]) + 1) % 10), original, count=2)
    user_turn.locator("textarea").fill(corrected if corrected != original else f"{original} Thanks.")
    page.screenshot(path=str(shots / "correction.png"), full_page=False)
    user_turn.get_by_role("button", name="Save correction").click()

    page.locator(f'.call-page[data-version="{version + 1}"]').wait_for()
    assert _api(worker, f"/calls/{call_id}")["version"] == version + 1
    assert f"version {version + 1}" in page.locator(".notice.success").inner_text()
    page.screenshot(path=str(shots / "corrected.png"), full_page=False)


def test_a_new_version_published_elsewhere_appears_without_a_reload(scored, page):
    worker, expected = scored
    call_id = next(c for c, r in sorted(expected.items()) if r["final"] and r["evaluation"].get("turns"))
    page.goto(f"/#/calls/{call_id}")
    call = page.locator(".call-page")
    call.wait_for()
    version = int(call.get_attribute("data-version"))
    page.locator(".live-status.on, .live-status.poll").wait_for()  # (the feed is connected)

    _api(worker, f"/calls/{call_id}/annotations", {"user_sentiment": "Negative"})

    page.locator(f'.call-page[data-version="{version + 1}"]').wait_for()
    assert page.locator('.sheet-row[data-metric="sentiment"] [data-score]').get_attribute("data-score") == "20"


def test_the_run_page_shows_the_numbers_of_its_all_summary(scored, page, shots):
    worker, expected = scored
    run_id = next(r["run_id"] for r in expected.values() if r["run_id"])
    page.goto(f"/#/runs/{run_id}")
    page.locator(f'[data-summary="{run_id}"]').wait_for()
    summary_txt = _api_text(worker, f"/runs/{run_id}/summary.txt")

    # (all_summary.txt pads its per-signal labels into a column: compared with white space folded.)
    folded = " ".join(summary_txt.split())
    for row in page.locator(f'[data-summary="{run_id}"] tr').all():
        assert " ".join(f"{row.locator('th').inner_text()}: {row.locator('td').inner_text()}".split()) in folded
    for row in page.locator("[data-latency]").all():
        assert f"\n  {row.locator('th').inner_text()}: {row.locator('td').inner_text()}\n" in summary_txt
    for domain in page.locator("[data-domain]").all():
        name = domain.get_attribute("data-domain")
        chips = dict(chip.split(": ", 1) for chip in domain.locator(".rate-chip").all_inner_texts())
        in_file = _domain_rates(summary_txt, name)
        # The file prints a per-domain rate only when more than one domain has it: those it prints agree.
        assert in_file and {rate: chips.get(rate) for rate in in_file} == in_file
        # Each scenario of the domain links to its call.
        assert domain.locator("tbody tr td:first-child a").count() == sum(
            1
            for r in expected.values()
            if r["run_id"] == run_id and r["evaluation"]["scenario_name"].startswith(f"{name}__")
        )
    page.screenshot(path=str(shots / "run.png"), full_page=False)


def test_the_alerts_page_lists_the_rules_in_force(scored, page, shots):
    worker, _ = scored
    page.goto("/#/alerts")
    page.locator("[data-rule]").first.wait_for()
    rules = [rule["name"] for rule in _api(worker, "/alerts/rules")["rules"]]
    assert [row.get_attribute("data-rule") for row in page.locator("[data-rule]").all()] == rules
    page.screenshot(path=str(shots / "alerts.png"), full_page=True)


def test_calls_in_progress_show_their_metrics_so_far_marked_provisional(open_calls, browser, shots):
    worker = open_calls
    with _signed_in_page(browser, worker, ".tile") as page:
        page.goto("/#/live")
        page.locator(".open-call").first.wait_for()
        held = {row["call_id"] for row in _api(worker, "/calls?state=open&limit=200")["calls"]}
        page.locator(".open-call").nth(len(held) - 1).wait_for()
        shown = {card.get_attribute("data-call") for card in page.locator(".open-call").all()}
        assert shown == held and page.locator(".open-call .provisional").count() == len(held)
        page.screenshot(path=str(shots / "in-progress.png"), full_page=False)

        call_id = sorted(held)[0]
        page.locator(f'.open-call[data-call="{call_id}"] a').first.click()
        page.locator(f'.call-page[data-call="{call_id}"]').wait_for()
        assert _api(worker, f"/calls/{call_id}")["final"] is False
        assert "provisional" in page.locator(".notice.warn").inner_text()
        assert page.get_by_role("button", name="Correct transcript").count() == 0  # (an open call is not corrected)


RUN_A = "eval_20251006_0900"
RUN_B = "eval_20251006_0900-rerun"
RERUN_CALLS = 40  # the run's first calls, scored again as a second run
BROKEN_HASHES = 10  # of which the first ones expect another DB state: they cannot match it now


def _log_with_a_rerun(path: Path) -> Path:
    """The sample with a second run: its run's first calls again under new ids, each event right after
    its original (so event time moves as in the sample), the first few expecting another DB state."""
    lines, rerun, broken = [], set(), 0
    for line in Path(SAMPLE).read_text(encoding="utf-8").splitlines():
        lines.append(line)
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("data"), dict):
            continue
        if event.get("type") == "call.started" and event["data"].get("run_id") == RUN_A and len(rerun) < RERUN_CALLS:
            rerun.add(event["call_id"])
        if event.get("call_id") not in rerun:
            continue
        copy = json.loads(line)
        copy["call_id"] += "-rerun"
        copy["event_id"] = f"{copy.get('event_id')}-rerun"
        if copy["type"] == "call.started":
            copy["data"]["run_id"] = RUN_B
            if broken < BROKEN_HASHES and copy["data"].get("scenario", {}).get("expected_db_hash"):
                copy["data"]["scenario"]["expected_db_hash"] = "0" * 64
                broken += 1
        lines.append(json.dumps(copy))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def two_runs(broker, tmp_path):
    """A worker that scored the sample and a second run of some of its scenarios; replay's latest results."""
    _browser_or_skip()
    log = str(_log_with_a_rerun(tmp_path / "rerun.jsonl"))
    prefix = f"t-dashboard-runs-{os.getpid()}"
    results, _ = replay_results(log)
    expected = latest_by_call(results)
    worker = start_worker(broker, prefix, env={"CALLQA_API_TOKEN": TOKEN})
    try:
        settings = settings_for(broker, prefix)
        with ThreadPoolExecutor(1) as thread:  # (the browser's event loop may already run in this one)
            thread.submit(send, log, settings).result()
            thread.submit(collect_results, settings, expected).result()
        yield worker, expected
    finally:
        worker.stop()


def test_two_runs_side_by_side_show_each_rate_and_the_scenarios_that_changed(two_runs, browser, shots):
    worker, expected = two_runs
    success = {
        run: {
            r["evaluation"]["scenario_name"]: r["evaluation"]["is_successful"]
            for r in expected.values()
            if r["run_id"] == run
        }
        for run in (RUN_A, RUN_B)
    }
    changed = {name for name, ok in success[RUN_B].items() if success[RUN_A][name] != ok}
    assert changed  # (the broken DB states make some fail)

    with _signed_in_page(browser, worker, ".tile") as page:
        page.goto(f"/#/runs/{RUN_A}?vs={RUN_B}")
        page.locator("[data-compare]").wait_for()
        summaries = [_api(worker, f"/runs/{run}/summary") for run in (RUN_A, RUN_B)]
        for row in page.locator("[data-compare] tbody tr").all():
            name = row.get_attribute("data-rate")
            shown = [cell.inner_text() for cell in row.locator("td").all()[:2]]
            assert shown == [_rate_text(summary[name]) for summary in summaries]
        assert {row.get_attribute("data-scenario") for row in page.locator("[data-changed] tbody tr").all()} == changed
        regressions = {name for name in changed if success[RUN_A][name]}
        assert page.locator("[data-changed] tbody tr.regression").count() == len(regressions)
        page.screenshot(path=str(shots / "compare.png"), full_page=False)


def _rate_text(rate: dict | None) -> str:
    """A rate as all_summary.txt prints it (scorers/runs/text.py)."""
    return "–" if rate is None else f"{100 * rate['passed'] / rate['total']:.2f}% ({rate['passed']}/{rate['total']})"


def test_setting_the_sentiment_from_the_page_rescores_the_call(scored, page):
    worker, expected = scored
    call_id = sorted(c for c, r in expected.items() if r["final"] and r["evaluation"].get("turns"))[-1]
    page.goto(f"/#/calls/{call_id}")
    call = page.locator(f'.call-page[data-call="{call_id}"]')
    call.wait_for()
    version = int(call.get_attribute("data-version"))

    page.locator('select[name="user_sentiment"]').select_option("Negative")
    page.get_by_role("button", name="Set sentiment").click()

    page.locator(f'.call-page[data-version="{version + 1}"]').wait_for()
    sentiment = page.locator('.sheet-row[data-metric="sentiment"]')
    assert sentiment.get_attribute("data-verdict") == "fail"  # (Negative scores 20, under the pass mark of 50)
    assert sentiment.locator("[data-score]").get_attribute("data-score") == "20"
    assert _api(worker, f"/calls/{call_id}")["version"] == version + 1
