"""The observer loads inside a bot whose own top-level packages are named as callqa's (`models`,
`streams`, `scorers`), first on its path: it neither shadows them nor is shadowed by them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.helpers.paths import REPO
from tests.unit.test_layering import imported_packages

pytest.importorskip("pipecat")

CALLQA_PACKAGES = {"models", "scorers", "streams"}


def test_the_integrations_import_nothing_of_callqas_own_packages():
    modules = sorted((REPO / "streams" / "integrations").glob("*.py")) + sorted((REPO / "callqa").glob("*.py"))
    assert {str(m.relative_to(REPO)): sorted(imported_packages(m) & CALLQA_PACKAGES) for m in modules} == {
        str(m.relative_to(REPO)): [] for m in modules
    }


BOT = """
import models, scorers, streams
from callqa.pipecat import CallqaObserver

observer = CallqaObserver(bootstrap_servers="127.0.0.1:1", call_id="c1", agent_id="bot")
import models, scorers, streams
assert (models.OWNER, scorers.OWNER, streams.OWNER) == ("bot", "bot", "bot")
callqa_modules = sorted(name for name in sys.modules if name.split(".")[0] in {"models", "scorers", "streams"}
                        and name not in {"models", "scorers", "streams"})
print(type(observer).__name__, callqa_modules)
"""


def test_a_bot_with_its_own_models_streams_and_scorers_packages_loads_the_observer(tmp_path):
    for name in sorted(CALLQA_PACKAGES):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text('OWNER = "bot"\n')
    # (Run from the bot's directory, which Python puts first on the path, as a bot's own code runs.)
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + textwrap.dedent(BOT)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "CallqaObserver []"
