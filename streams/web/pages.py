"""The web UI: `GET /` answers the page, `GET /static/...` its script and style sheet.

The page is plain HTML, CSS and JavaScript modules under streams/web/static/, shipped as package data:
nothing to build, nothing fetched from the internet. It reads the same JSON routes anyone can
(streams/web/api.py); the shell itself holds no call content, so it is served without the API token
and asks for the token only when a route answers 401.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faust

STATIC_DIR = Path(__file__).parent / "static"
INDEX_FILE = STATIC_DIR / "index.html"
# Faust's own index at `/` (`{"status": "OK"}`) gives way to the page.
FAUST_INDEX_BLUEPRINT = "faust.web.apps.production_index:blueprint"


def install_pages(app: faust.App) -> None:
    _drop_faust_index(app)

    @app.page("/")
    async def index(web: Any, request: Any) -> Any:
        # no-cache: a worker upgraded in place serves its new page at once.
        return web.html(INDEX_FILE.read_text(encoding="utf-8"), headers={"Cache-Control": "no-cache"})

    app.web.add_static("/static/", STATIC_DIR)
    app.web.web_app.on_response_prepare.append(_revalidate_static)  # type: ignore[attr-defined]  # (aiohttp's Web)


async def _revalidate_static(request: Any, response: Any) -> None:
    """The browser asks again (a 304 when unchanged) rather than run a cached script from before an
    upgrade beside the new page."""
    if request.path.startswith("/static/"):
        response.headers.setdefault("Cache-Control", "no-cache")


def _drop_faust_index(app: faust.App) -> None:
    """Faust mounts its index at `/` when it starts its web server; without it, `/` is the page's alone
    (else which of the two answers depends on the order of registration)."""
    blueprints = app.web.blueprints
    blueprints._enabled = [(prefix, bp) for prefix, bp in blueprints._enabled if bp != FAUST_INDEX_BLUEPRINT]
