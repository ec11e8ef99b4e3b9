"""Calls in progress: what no post-call product can show. A call is open in the memory of the worker
whose partition it is; its metrics so far are the same scorers' results over the events arrived,
provisional (`"final": false`), and change with every event.

`GET /calls/{id}` of an open call and `GET /calls?state=open` answer from the worker holding each call:
any other worker passes the first on to it, and gathers the second from every worker of the group.
A request passed on carries FORWARDED, so that it is answered where it lands and never goes round.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import msgspec

from models.call_state import CallState
from scorers.call_result import score_call
from scorers.engine import CallEngine

FORWARDED = "X-Callqa-Forwarded"
GATHER_TIMEOUT_S = 3.0


def provisional_result(engine: CallEngine, call: CallState) -> dict[str, Any]:
    """The call's result as if it ended now: `final` false, `version` the last published (0: none)."""
    ts_ms = call.last_ts_ms if call.last_ts_ms is not None else (call.first_ts_ms or 0)
    document = msgspec.to_builtins(score_call(call, engine.registry, engine.cohorts, call.version, ts_ms))
    document["open"] = {
        "turns": len(call.turns),
        "events_applied": call.events_applied,
        "last_ts_ms": call.last_ts_ms,
        "started_ts_ms": call.started_ts_ms,
    }
    return document


def open_call(engine: CallEngine, call_id: str) -> CallState | None:
    call = engine.calls.get(call_id)
    return call if call is not None and not call.has_ended else None


def open_call_rows(engine: CallEngine, agent_id: str | None, limit: int) -> list[dict[str, Any]]:
    """This worker's open calls, latest activity first, each with its metrics so far."""
    calls = [
        call for call in engine.calls.values() if not call.has_ended and (agent_id is None or call.agent_id == agent_id)
    ]
    calls.sort(key=lambda call: (call.last_ts_ms or 0, call.call_id), reverse=True)
    rows = []
    for call in calls[:limit]:
        result = provisional_result(engine, call)
        rows.append(
            {
                "call_id": call.call_id,
                "agent_id": call.agent_id,
                "final": False,
                "version": call.version,
                "started_ts_ms": call.started_ts_ms,
                "last_ts_ms": call.last_ts_ms,
                "turns": len(call.turns),
                "events_applied": call.events_applied,
                "metrics": [
                    {key: metric[key] for key in ("metric", "value", "score", "passed")} for metric in result["metrics"]
                ],
            }
        )
    return rows


async def gather_open_calls(
    app: Any, journal_table: str, request: Any, own: list[dict[str, Any]], limit: int
) -> dict[str, Any]:
    """This worker's open calls and every other worker's (asked with FORWARDED), latest first."""
    me = _ident(str(app.conf.canonical_url))
    try:
        hosts = [str(url) for url in app.router.table_metadata(journal_table)]
    except Exception:  # no assignment yet: this worker's own calls
        hosts = []
    others = [host for host in hosts if _ident(host) != me]
    unreachable: list[str] = []

    async def ask(host: str) -> list[dict[str, Any]]:
        url = host.rstrip("/") + request.path_qs
        headers = {
            FORWARDED: "1",
            **({"Authorization": request.headers["Authorization"]} if "Authorization" in request.headers else {}),
        }
        try:
            async with app.http_client.get(
                url, headers=headers, timeout=aiohttp.ClientTimeout(total=GATHER_TIMEOUT_S)
            ) as response:
                if response.status == 200:
                    return list((await response.json()).get("calls", []))
        except Exception:  # a worker that does not answer is named, the rest answered
            pass
        unreachable.append(host)
        return []

    answers = await asyncio.gather(*(ask(host) for host in others))
    rows = own + [row for answer in answers for row in answer]
    rows.sort(key=lambda row: (row.get("last_ts_ms") or 0, row["call_id"]), reverse=True)
    return {"calls": rows[:limit], "workers_unreachable": sorted(unreachable)}


def _ident(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/")
