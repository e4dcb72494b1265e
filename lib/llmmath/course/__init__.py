"""The course's machinery: the claims and their checks, the exercises' answers, the widgets and explorers, the
plots' house style.

``claims`` (the 40 claims, their verdicts, ``claims.check(n)``), ``checks`` (one module of checks
per chapter), ``answers`` (``check_answer`` for the exercises), ``widgets`` and ``explorers``
(the ipywidgets explorers), ``plots``. They use the math and the measured demos; neither uses
them (``plots`` aside, which a demo may use to draw its own result).
"""
