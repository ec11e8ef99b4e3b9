"""Readable text for people: one line per result, dead letter or alert, and the demo's table."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

# Control characters (C0, DEL, C1) shown escaped: a call_id, agent_id or stop reason comes from the
# producer, and raw it could clear the terminal, recolour it or forge lines of its own.
_CONTROL_CHARACTERS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}


def shown(text: str) -> str:
    """`text` safe to print on a terminal: its control characters escaped (`\\x1b`, `\\x0a`)."""
    return text.translate(_CONTROL_CHARACTERS)


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def metrics_passed(result: dict[str, Any]) -> tuple[int, int]:
    applicable = [m for m in result.get("metrics", []) if m.get("score") is not None]
    return sum(1 for m in applicable if m.get("passed")), len(applicable)


def result_line(result: dict[str, Any]) -> str:
    ev = result.get("evaluation", {})
    passed, applicable = metrics_passed(result)
    return shown(
        f"{result['call_id']} v{result['version']} agent={result.get('agent_id') or '-'} "
        f"turns={ev.get('total_turns', '-')} dur={_fmt(ev.get('duration_seconds'))}s "
        f"p50={_fmt(ev.get('latency_stats', {}).get('p50_ms'), 0)}ms stop={ev.get('stop_reason')} "
        f"metrics={passed}/{applicable} passed success={_fmt(ev.get('is_successful', '-'))}"
    )


def dead_letter_line(document: dict[str, Any]) -> str:
    return shown(
        f"{document.get('topic')}[{document.get('partition')}]@{document.get('offset')}: {document.get('reason')}"
    )


def alert_line(alert: dict[str, Any]) -> str:
    """Windows hold the calls that ended in (start, end]; the end is the event time of the transition."""
    samples = ",".join(alert.get("sample_call_ids") or []) or "-"
    return shown(
        f"[{str(alert.get('state', '')).upper():8}] {alert.get('severity', '')} {alert.get('rule')} "
        f"scope={alert.get('scope')} metric={alert.get('metric')} pass_rate={_fmt(alert.get('pass_rate'), 3)} "
        f"({alert.get('passed')}/{alert.get('total')}) fire<{_fmt(alert.get('fire_below'), 2)} "
        f"clear>={_fmt(alert.get('clear_above'), 2)} window={_fmt(alert.get('window_s'), 0)}s "
        f"({_utc(alert.get('window_start_ms'))}, {_utc(alert.get('window_end_ms'))}] samples={samples} "
        f"key={alert.get('dedupe_key')}"
    )


def _utc(ts_ms: Any) -> str:
    if not isinstance(ts_ms, int):
        return "-"
    return datetime.fromtimestamp(ts_ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


COLUMNS = [
    ("call", 26),
    ("ver", 3),
    ("agent", 12),
    ("scenario", 28),
    ("turns", 5),
    ("dur s", 7),
    ("p50 ms", 7),
    ("stop", 22),
    ("metrics", 7),
    ("success", 7),
]


def results_table(results: Iterable[dict[str, Any]]) -> str:
    rows = []
    for r in sorted(results, key=lambda r: r["call_id"]):
        ev = r.get("evaluation", {})
        passed, applicable = metrics_passed(r)
        rows.append(
            [
                r["call_id"],
                str(r["version"]),
                r.get("agent_id") or "-",
                str(ev.get("scenario_name", "-")),
                str(ev.get("total_turns", "-")),
                _fmt(ev.get("duration_seconds")),
                _fmt(ev.get("latency_stats", {}).get("p50_ms"), 0),
                str(ev.get("stop_reason")),
                f"{passed}/{applicable}",
                _fmt(ev.get("is_successful", "-")),
            ]
        )
    header = "  ".join(name.ljust(width) for name, width in COLUMNS)
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append("  ".join(shown(cell)[:width].ljust(width) for cell, (_, width) in zip(row, COLUMNS, strict=True)))
    return "\n".join(lines)


def totals_block(results: list[dict[str, Any]]) -> str:
    """Per-metric totals: calls where it applied, average score, pass rate."""
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        for m in r.get("metrics", []):
            by_metric.setdefault(m["metric"], []).append(m)
    lines = [f"{'metric':22}  {'applied':>7}  {'avg score':>9}  {'pass rate':>9}"]
    for name, entries in by_metric.items():
        applied = [m for m in entries if m.get("score") is not None]
        avg = sum(m["score"] for m in applied) / len(applied) if applied else None
        rate = sum(1 for m in applied if m.get("passed")) / len(applied) if applied else None
        lines.append(
            f"{name:22}  {len(applied):>7}  {_fmt(avg):>9}  {(_fmt(rate * 100) + '%') if rate is not None else '-':>9}"
        )
    successes = [
        r["evaluation"].get("is_successful")
        for r in results
        if isinstance(r.get("evaluation", {}).get("is_successful"), bool)
    ]
    if successes:
        lines.append(
            f"\nscenarios with a verdict: {len(successes)}, successful: {sum(successes)} "
            f"({100 * sum(successes) / len(successes):.1f}%)"
        )
    return "\n".join(lines)


def result_changes_text(report: dict[str, Any], calls_shown: int) -> str:
    """`callqa compare`'s report (scorers/result_changes.py, as its `to_dict`) for people."""
    lines = [
        f"calls: {report['calls_compared']} compared (before {report['calls_before']}, after "
        f"{report['calls_after']}), {report['calls_changed']} with a verdict changed; only before: "
        f"{len(report['only_before'])}, only after: {len(report['only_after'])}"
    ]
    header = (
        "verdict",
        "compared",
        "changed",
        "mean score change",
        "pass→fail",
        "fail→pass",
        "now judged",
        "no longer judged",
        "added",
        "gone",
    )
    rows = [header] + [
        (
            shown(t["name"]),
            str(t["compared"]),
            str(t["changed"]),
            "-" if t["mean_score_change"] is None else f"{t['mean_score_change']:+.2f}",
            str(t["passed_to_failed"]),
            str(t["failed_to_passed"]),
            str(t["became_judged"]),
            str(t["became_unjudged"]),
            str(t["added"]),
            str(t["gone"]),
        )
        for t in report["verdicts"]
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += [
        "  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        for row in rows
    ]
    changed = report["changed_calls"]
    if changed and calls_shown:
        shown_of = f" (the first {calls_shown} of {len(changed)})" if len(changed) > calls_shown else ""
        lines.append(f"calls changed{shown_of}:")
        for call in changed[:calls_shown]:
            lines.append(
                shown(
                    f"  {call['call_id']}: "
                    + "; ".join(
                        f"{change['name']} {_verdict_text(change['before'])} → {_verdict_text(change['after'])}"
                        for change in call["changes"]
                    )
                )
            )
    for side in ("only_before", "only_after"):
        if report[side] and calls_shown:
            shown_ids = ", ".join(report[side][:calls_shown])
            more = f" and {len(report[side]) - calls_shown} more" if len(report[side]) > calls_shown else ""
            lines.append(shown(f"{side.replace('_', ' ')}: {shown_ids}{more}"))
    return "\n".join(lines)


def _verdict_text(verdict: dict[str, Any] | None) -> str:
    if verdict is None:
        return "absent"
    judged = {True: "pass", False: "fail", None: "not judged"}[verdict["passed"]]
    return judged if verdict["score"] is None else f"{_fmt(verdict['score'])} {judged}"
