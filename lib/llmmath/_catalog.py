"""Loading the TOML catalogs shipped in ``llmmath/data`` and name lookup."""

from __future__ import annotations

import dataclasses
import difflib
import sys
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Mapping

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
    # names that start with what was typed first ('h100' -> h100-sxm, h100-pcie), then look-alikes
    prefixed = [k for k in table if k.startswith(key)]
    close = (prefixed + [k for k in difflib.get_close_matches(key, list(table), n=3, cutoff=0.4)
                         if k not in prefixed])[:3]
    hint = f"; closest: {', '.join(close)}" if close else ""
    raise KeyError(f"unknown {what} {name!r}{hint}; all: {', '.join(sorted(table))}")


def entries(filename: str, table: str, cls, convert=None) -> Mapping:
    """Objects of dataclass ``cls`` built from ``[table."key"]`` rows of ``filename``, by key, in file order.

    Keys the dataclass does not have (comments kept as fields in the TOML) are
    dropped; ``sources`` becomes a read-only mapping and ``unverified`` a tuple.
    ``convert(key, kwargs)`` may adjust the arguments first.
    """
    names = {f.name for f in dataclasses.fields(cls)}
    out = {}
    for key, row in load(filename)[table].items():
        kw = {f: v for f, v in row.items() if f in names}
        if "sources" in names:
            kw["sources"] = MappingProxyType(dict(row.get("sources", {})))
        if "unverified" in names:
            kw["unverified"] = tuple(row.get("unverified", ()))
        if convert is not None:
            kw = convert(key, kw)
        out[key] = cls(key=key, **kw)
    return MappingProxyType(out)


def resolve(name, cls, catalog: Mapping, what: str):
    """An object of ``cls`` as is, or the catalog entry called ``name`` (KeyError with suggestions).

    Raises:
        TypeError: ``name`` is neither a string nor a ``cls`` (the message says both are allowed).
    """
    if isinstance(name, cls):
        return name
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a catalog name (a string such as {next(iter(catalog))!r}) "
                        f"or a {cls.__name__}, got {name!r}")
    return lookup(dict(catalog), name, what)[1]


def select(rows: dict, keys, what: str, file: str) -> list:
    """``[(key, entry)]`` of ``rows`` in file order, all of them or those named in ``keys``; ``KeyError`` naming the
    first unknown key (``"no {what} {key!r} in data/{file}"``)."""
    unknown = [k for k in (keys or ()) if k not in rows]
    if unknown:
        raise KeyError(f"no {what} {unknown[0]!r} in data/{file}")
    return [(k, e) for k, e in rows.items() if keys is None or k in keys]
