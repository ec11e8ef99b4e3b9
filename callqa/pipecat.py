"""`from callqa.pipecat import CallqaObserver`: streams/integrations/pipecat.py, loaded by its path
(see callqa/__init__.py for why not as `streams.integrations.pipecat`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parent.parent / "streams" / "integrations" / "pipecat.py"
_NAME = "callqa._pipecat_observer"


def _load():
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    spec = importlib.util.spec_from_file_location(_NAME, _SOURCE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    spec.loader.exec_module(module)
    return module


_module = _load()
CallqaObserver = _module.CallqaObserver
__all__ = ["CallqaObserver"]
