"""The course's explorers: one module per chapter (``chNN.py``), each a factory of a
:class:`llmmath.course.widgets.Explorer` built from the library's pure functions.

The generic machinery (blitted figure, controls, text panel) lives in
:mod:`llmmath.course.widgets`; here are only the chapters' explorers, registered by name.
Which explorer tells which claim's story is recorded in the claims ledger
(``explorer = "..."`` in ``data/claims.toml``); :func:`llmmath.course.widgets.explorer_for`
builds claim *n*'s.
"""

from __future__ import annotations

from typing import Callable

_REGISTRY: dict[str, Callable] = {}


def register(name: str, factory: Callable) -> Callable:
    """Record ``factory`` (no required arguments, returns an Explorer) under ``name``."""
    if name in _REGISTRY and _REGISTRY[name] is not factory:
        raise ValueError(f"two explorers are called {name!r}")
    _REGISTRY[name] = factory
    return factory


def names() -> list[str]:
    """Every registered explorer's name."""
    return sorted(_REGISTRY)


def get(name: str) -> Callable:
    """The factory registered as ``name``.

    Raises:
        KeyError: no explorer of that name (the message lists them).
    """
    if name not in _REGISTRY:
        raise KeyError(f"no explorer called {name!r}; known: {', '.join(names())}")
    return _REGISTRY[name]


from .ch00 import *  # noqa: E402,F401,F403  (each module registers its explorers on import)
from .ch01 import *  # noqa: E402,F401,F403
from .ch02 import *  # noqa: E402,F401,F403
from .ch03 import *  # noqa: E402,F401,F403
from .ch04 import *  # noqa: E402,F401,F403
from .ch05 import *  # noqa: E402,F401,F403
from .ch06 import *  # noqa: E402,F401,F403
from .ch07 import *  # noqa: E402,F401,F403
from .ch08 import *  # noqa: E402,F401,F403
from .ch09 import *  # noqa: E402,F401,F403
from .ch10 import *  # noqa: E402,F401,F403
from .ch11 import *  # noqa: E402,F401,F403
from .ch12 import *  # noqa: E402,F401,F403
