"""llmmath: the math of how large language models are trained and served.

The shared library of the course, in three kinds, one folder each:

* **the math** (this folder): pure functions of their inputs, in SI units (bytes, FLOPs,
  seconds), vectorized over NumPy arrays -- ``units``, ``hardware``, ``models``, ``roofline``,
  ``serving``, ``attention``, ``moe``, ``memory``, ``network``, ``parallelism``, ``schedule``,
  ``training``, ``training_layout``, ``long_context``, ``sparse_attention``, ``ciphers``,
  ``planner`` and ``deployment``, the one description of a deployment they share;
* **the measured demos** (:mod:`llmmath.demos`): kernels and small experiments run on this machine;
* **the course's machinery** (:mod:`llmmath.course`): claims and checks, answers, widgets,
  explorers, plots.

The math imports neither of the others (``tests/test_kernels_widgets.py`` reads the folders).
Every module of the demos and the machinery is also reachable by its short name, so a
chapter writes ``from llmmath import claims, kernels`` and ``llmmath.claims.check(20)``.
"""

import importlib

from . import hardware, models, roofline, serving, units
from .course.answers import check_answer

__version__ = "0.1.0"

#: short name -> the subpackage that holds it (``from llmmath import kernels`` is ``llmmath.demos.kernels``)
SHORT_NAMES = {**{name: "demos" for name in (
    "kernels", "attention_kernels", "machine", "measured", "moe_bench", "mpi_bench", "mpi_collectives",
    "mpi_pipeline", "mpi_train", "schedule_bench", "critical_batch", "reversible", "adversarial")},
               **{name: "course" for name in ("claims", "checks", "answers", "widgets", "explorers", "plots")}}

__all__ = ["hardware", "models", "roofline", "serving", "units", "check_answer", "__version__", *SHORT_NAMES]


def __getattr__(name: str):
    """``llmmath.kernels`` -> ``llmmath.demos.kernels``, ``llmmath.claims`` -> ``llmmath.course.claims``, on first use."""
    if name in SHORT_NAMES:
        module = importlib.import_module(f"{__name__}.{SHORT_NAMES[name]}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *SHORT_NAMES})
