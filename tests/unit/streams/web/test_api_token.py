"""The HTTP API's write token over real HTTP: the worker's own middlewares in front of a handler that
writes, reached through a socket, bytes as a client sends them."""

from __future__ import annotations

import asyncio

import aiohttp.web

from streams.config import Settings
from streams.web.api import json_errors, write_token_check


async def _answers(token: str | None, requests: list[bytes]) -> list[bytes]:
    """The status line the API answers each raw request with."""

    async def write(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"written": True}, status=201)

    app = aiohttp.web.Application(middlewares=[json_errors, write_token_check(token)])
    app.router.add_route("*", "/cohorts", write)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    lines = []
    try:
        for request in requests:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            await writer.drain()
            lines.append((await reader.readline()).strip())
            writer.close()
    finally:
        await runner.cleanup()
    return lines


def _post(authorization: bytes | None) -> bytes:
    header = b"Authorization: " + authorization + b"\r\n" if authorization is not None else b""
    return b"POST /cohorts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n" + header + b"\r\n{}"


def test_a_token_read_from_a_file_with_its_newline_is_the_token_without_it():
    token = Settings(api_token=" t0ken-for-writes\n").api_token_in_force
    assert token == "t0ken-for-writes" and Settings(api_token=" \n").api_token_in_force is None
    answers = asyncio.run(
        _answers(
            token,
            [
                _post(b"Bearer t0ken-for-writes"),
                _post(b"bearer  t0ken-for-writes "),
                _post(b"Bearer t0ken-for-writesx"),
                _post(None),
            ],
        )
    )
    assert answers == [
        b"HTTP/1.1 201 Created",
        b"HTTP/1.1 201 Created",
        b"HTTP/1.1 401 Unauthorized",
        b"HTTP/1.1 401 Unauthorized",
    ]


def test_a_header_that_is_no_utf8_is_refused_not_an_error_of_the_server():
    token = "t0kén"
    answers = asyncio.run(
        _answers(token, [_post(b"Bearer \xff\xfe"), _post(b"Bearer t0k\xe9n"), _post("Bearer t0kén".encode())])
    )
    assert answers == [b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 201 Created"]


def test_reads_need_no_token_and_no_token_asks_for_none():
    get = b"GET /cohorts HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    assert asyncio.run(_answers("t0ken", [get])) == [b"HTTP/1.1 201 Created"]  # (the handler answers every method)
    assert asyncio.run(_answers(None, [_post(None)])) == [b"HTTP/1.1 201 Created"]


def test_a_token_whose_bytes_are_no_utf8_asks_for_those_bytes():
    # (The environment hands Python bytes that are no UTF-8 as surrogates.)
    token = Settings(api_token="t0k\udce9n").api_token_in_force
    answers = asyncio.run(_answers(token, [_post(b"Bearer t0k\xe9n"), _post("Bearer t0kén".encode())]))
    assert answers == [b"HTTP/1.1 201 Created", b"HTTP/1.1 401 Unauthorized"]


async def _reads(token: str | None, paths: list[str], authorization: bytes | None = None) -> list[bytes]:
    """The status line each GET of `paths` is answered with, through the worker's middlewares."""
    from streams.web.routes import checked_query, reads_content

    async def read(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"read": True})

    app = aiohttp.web.Application(middlewares=[json_errors, write_token_check(token, reads_content), checked_query])
    for path in ("/calls", "/calls/{call_id}", "/timeseries", "/health", "/metrics", "/cohorts", "/runs"):
        app.router.add_get(path, read)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    header = b"Authorization: " + authorization + b"\r\n" if authorization else b""
    lines = []
    try:
        for path in paths:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + header + b"\r\n")
            await writer.drain()
            lines.append((await reader.readline()).strip())
            writer.close()
    finally:
        await runner.cleanup()
    return lines


def test_reads_of_call_content_need_the_token_and_health_metrics_and_definitions_do_not():
    content, open_ = ["/calls", "/calls/c1", "/timeseries", "/runs"], ["/health", "/metrics", "/cohorts"]
    assert (
        asyncio.run(_reads("t0ken", content + open_)) == [b"HTTP/1.1 401 Unauthorized"] * 4 + [b"HTTP/1.1 200 OK"] * 3
    )
    assert asyncio.run(_reads("t0ken", content, b"Bearer t0ken")) == [b"HTTP/1.1 200 OK"] * 4
    assert asyncio.run(_reads(None, content)) == [b"HTTP/1.1 200 OK"] * 4
    assert asyncio.run(_reads("t0ken", ["/no/such/path"])) == [b"HTTP/1.1 404 Not Found"]  # (not a 401)
