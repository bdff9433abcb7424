"""The scripts of ``scripts/`` as modules: their functions and ``main(argv)`` called in the test's process,
which has torch and hiersum loaded already (a subprocess would import them again)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.helpers.paths import PROJECT_ROOT


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a fresh module (its ``__file__`` the script's: a child it starts runs the script),
    registered in ``sys.modules`` under ``name`` (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, PROJECT_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
