"""Loads a script of bench/ as a module, for its tests (the scripts are not a package)."""

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent.parent / "bench"


def load(name):
    """bench/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
