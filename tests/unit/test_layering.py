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
    "scorers": {
        "streams",
        "faust",
        "mode",
        "aiokafka",
        "aiohttp",
        "openai",
        "httpx",
        "rocksdict",
        "socket",
        "subprocess",
        "requests",
        "urllib",
    },
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
    crossings = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[layer])
        for path in found
        if str(path.relative_to(ROOT)) not in EXEMPT
    }
    assert {module: names for module, names in crossings.items() if names} == {}


def test_the_import_reader_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import json\n\ndef f():\n    from streams.worker.live_scorer import LiveScorer\n    import aiokafka.errors\n"
    )
    assert imported_packages(module) == {"json", "streams", "aiokafka"}


def imported_modules(path: Path) -> set[str]:
    """The dotted names of the modules a module imports from when it runs (a function's own imports too;
    not those under `if TYPE_CHECKING:`, which only name a type for the checker)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


# Inside streams/, the house reads top-down: the command line over the worker, replay and sending, over
# the Kafka plumbing, the journal and files. What each sub-package may import of the others (the
# top-level modules, shared by all, are always allowed).
STREAMS_ALLOWED = {
    "cli": {"worker", "replay", "send", "judge", "alerts", "web", "kafka", "journal", "files", "bench", "integrations"},
    "bench": {"worker", "replay", "send", "web", "kafka", "journal", "files"},
    "worker": {"alerts", "web", "judge", "kafka", "journal", "files"},
    "judge": {"replay", "kafka", "files"},
    "replay": {"kafka", "files"},
    "send": {"kafka", "files"},
    "alerts": {"kafka", "journal", "files"},
    "web": {"kafka", "journal", "files"},
    "integrations": set(),
    "kafka": set(),
    "journal": set(),
    "files": set(),
}


def test_streams_sub_packages_import_only_what_lies_below_them():
    crossings = {}
    for package in sorted(p.name for p in (ROOT / "streams").iterdir() if (p / "__init__.py").exists()):
        allowed = STREAMS_ALLOWED[package] | {package}
        for path in sorted((ROOT / "streams" / package).rglob("*.py")):
            below = {
                name.split(".")[1]
                for name in imported_modules(path)
                if name.startswith("streams.") and (ROOT / "streams" / name.split(".")[1]).is_dir()
            }
            if below - allowed:
                crossings[str(path.relative_to(ROOT))] = sorted(below - allowed)
    assert crossings == {}


def test_the_top_of_streams_holds_only_the_shared_modules():
    assert len(sorted((ROOT / "streams").glob("*.py"))) <= 8


def test_imports_that_only_name_a_type_are_not_counted(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from streams.worker.app import X\n"
        "import streams.kafka.clients\n"
    )
    assert imported_modules(module) == {"typing", "streams.kafka.clients"}
