"""The claims' checks, one module per chapter (``chNN.py``).

Each module registers its check functions with :func:`llmmath.course.claims.register`;
:func:`llmmath.course.claims.check` imports them all on first use. A check recomputes a
claim from the library, compares it with numbers derived independently (a
datasheet figure, a hand derivation written in the check) and returns a
:class:`~llmmath.course.claims.Verdict`, raising :class:`~llmmath.course.claims.ClaimCheckFailed`
when the numbers no longer support it.
"""
