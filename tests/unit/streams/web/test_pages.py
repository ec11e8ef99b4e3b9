"""The web UI's files: served by a worker's web server at `/` and `/static/`, complete (every module
the page imports is there) and installed with the package."""

from __future__ import annotations

import asyncio
import re
import tomllib
from pathlib import Path

import aiohttp
import aiohttp.web
import faust

from streams.web.pages import STATIC_DIR, install_pages

ROOT = Path(__file__).resolve().parents[4]
IMPORT = re.compile(r'^\s*import\s.*?\sfrom\s+"(?P<path>[^"]+)";', re.MULTILINE | re.DOTALL)


async def _get(paths: list[str]) -> list[tuple[int, str, str, str]]:
    """Status, content type, body and Cache-Control of each path, from a Faust app's own web server
    with the pages."""
    app = faust.App("pages-test", broker="memory://", web_enabled=True)
    install_pages(app)
    app.web.init_server()  # (as the worker does at start: Faust's own routes join then)
    runner = aiohttp.web.AppRunner(app.web.web_app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession() as session:
            answers = []
            for path in paths:
                async with session.get(f"http://127.0.0.1:{port}{path}") as response:
                    answers.append(
                        (
                            response.status,
                            response.content_type,
                            await response.text(),
                            response.headers.get("Cache-Control", ""),
                        )
                    )
            return answers
    finally:
        await runner.cleanup()


def test_the_root_answers_the_page_instead_of_faust_s_status():
    ((status, content_type, body, _),) = asyncio.run(_get(["/"]))
    assert status == 200 and content_type == "text/html"
    assert '<script type="module" src="/static/js/app.js">' in body and '"status"' not in body


def test_the_page_s_script_and_style_sheet_are_served_with_their_types():
    answers = asyncio.run(_get(["/static/js/app.js", "/static/style.css", "/static/nothing.js"]))
    (js_status, js_type, _, js_cache), (css_status, css_type, _, _), (missing, _, _, _) = answers
    # (A browser runs a module served with either JavaScript type.)
    assert js_status == 200 and js_type in {"text/javascript", "application/javascript"}
    assert (css_status, css_type) == (200, "text/css")
    assert missing == 404
    assert js_cache == "no-cache"  # (asked again after an upgrade, never run stale beside a new page)


def test_every_module_the_page_imports_is_there():
    modules = sorted(STATIC_DIR.rglob("*.js"))
    assert modules
    for module in modules:
        for found in IMPORT.finditer(module.read_text(encoding="utf-8")):
            assert (module.parent / found["path"]).resolve().is_file(), f"{module.name} imports {found['path']}"


def test_no_file_of_the_page_is_fetched_from_elsewhere():
    """The page works with no internet: nothing it loads names another host."""
    for path in STATIC_DIR.rglob("*"):
        if path.suffix in {".html", ".js", ".css"}:
            text = path.read_text(encoding="utf-8")
            assert not re.search(
                r'(src|href)=["\']https?://|@import\s+url\(["\']?https?://|fetch\(["\']https?://', text
            ), path


def test_every_file_of_the_page_is_installed_with_the_package():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    # (setuptools globs each pattern from the package's folder, as Path.glob does)
    installed = {path for pattern in package_data.get("streams.web", []) for path in STATIC_DIR.parent.glob(pattern)}
    files = {path for path in STATIC_DIR.rglob("*") if path.is_file()}
    assert files and files <= installed, sorted(str(p) for p in files - installed)
