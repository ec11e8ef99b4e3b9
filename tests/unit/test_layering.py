"""The layers of the design card, as imports: scoring stays pure (no Kafka, no web, no I/O clients) so
that the live worker and in-process replay run the very same code, and the wire types depend on
nothing above them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

ROOT = REPO

# What each layer may not import, by top-level package.
FORBIDDEN = {
    "models": {"scorers", "streams", "faust", "mode", "aiokafka", "aiohttp", "openai", "httpx", "rocksdict"},
    "scorers": {"streams", "faust", "mode", "aiokafka", "aiohttp", "openai", "httpx", "rocksdict", "socket",
                "subprocess", "requests", "urllib"},
}


# The schema generator writes down the wire as the scorers fill it (the metric names a cohort may
# count, the evaluation document's always-present keys): a build step beside the wire types, not one.
EXEMPT = {"models/schema_export.py"}


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports, at any depth of its code (a function's own import too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def modules(layer: str) -> list[Path]:
    return sorted((ROOT / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it_nor_any_io_client(layer):
    found = modules(layer)
    assert len(found) > 5  # (the layer is where this test looks for it)
    crossings = {str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[layer])
                 for path in found if str(path.relative_to(ROOT)) not in EXEMPT}
    assert {module: names for module, names in crossings.items() if names} == {}


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import json\n\ndef f():\n    from streams.worker.live_scorer import LiveScorer\n    import aiokafka.errors\n")
    assert imported_packages(module) == {"json", "streams", "aiokafka"}
