"""llmmath: the math of how large language models are trained and served.

The shared library of the course. Every quantity is a pure function of its
inputs, in SI units (bytes, FLOPs, seconds), vectorized over NumPy arrays.

Modules: :mod:`units`, :mod:`hardware`, :mod:`models`, :mod:`roofline`,
:mod:`serving`, :mod:`kernels`, :mod:`claims`, :mod:`answers`, :mod:`plots`,
:mod:`widgets`.
"""

from . import hardware, models, roofline, serving, units
from .answers import check_answer

__version__ = "0.1.0"
__all__ = ["hardware", "models", "roofline", "serving", "units", "check_answer", "__version__"]
