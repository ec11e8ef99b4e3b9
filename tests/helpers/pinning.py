"""Pinning the source of third-party methods that callqa replaces, wraps or does in place of: an
upgrade that changes one fails its test instead of silently breaking the fix."""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import pytest


def source_digest(owner: Any, name: str) -> str:
    return hashlib.sha256(inspect.getsource(getattr(owner, name)).encode()).hexdigest()


def each_pin(pinned: dict[tuple[type, str], str]) -> Any:
    """Parametrizes a test over `pinned`'s (owner, name) pairs, named `Owner.name`."""
    return pytest.mark.parametrize("owner,name", list(pinned), ids=[f"{o.__name__}.{n}" for o, n in pinned])
