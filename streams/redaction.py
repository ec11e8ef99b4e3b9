"""URLs shown without what may be a secret in them, for error messages and logs."""

from __future__ import annotations

import re

# A URL inside a message (an HTTP client's error quotes the one it failed on, often normalised).
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redacted_url(url: str, keep_path: bool = False) -> str:
    """`url` without what may hold a secret: its user and password and its query always, its path
    too unless `keep_path` (a webhook's path is often its token; a judge's base URL path is not)."""
    # (The user and password end at the last "@" before the path, as urllib reads them: a password may hold one.)
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*://)?(?:[^/?#]*@)?([^/?#@]*)([^?#]*)", url)
    if match is None:  # (cannot happen: every part may be empty)
        return "…"
    scheme, host, path = match.group(1) or "", match.group(2), match.group(3)
    rest = path if keep_path else ("/…" if path.strip("/") else path)
    return f"{scheme}{host}{rest}" + ("?…" if len(url) > len(match.group(0)) else "")


def without_urls(text: str) -> str:
    """`text` with every URL in it cut to its scheme and host."""
    return URL_IN_TEXT.sub(lambda match: redacted_url(match.group(0)), text)
