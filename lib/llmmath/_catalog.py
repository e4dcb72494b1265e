"""Loading the TOML catalogs shipped in ``llmmath/data`` and name lookup."""

from __future__ import annotations

import difflib
import sys
from functools import lru_cache
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@lru_cache(maxsize=None)
def load(filename: str) -> dict:
    """Parsed contents of ``llmmath/data/<filename>`` (cached)."""
    text = resources.files("llmmath.data").joinpath(filename).read_text(encoding="utf-8")
    return tomllib.loads(text)


def lookup(table: dict, name: str, what: str):
    """``table[name]`` with a KeyError that suggests the closest names."""
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a string, got {name!r}")
    key = name.strip().lower()
    if key in table:
        return key, table[key]
    close = difflib.get_close_matches(key, list(table), n=3, cutoff=0.4)
    hint = f"; closest: {', '.join(close)}" if close else ""
    raise KeyError(f"unknown {what} {name!r}{hint}; all: {', '.join(sorted(table))}")
