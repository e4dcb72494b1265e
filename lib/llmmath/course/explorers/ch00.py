"""Chapter 0: the roofline (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, log_axes
from . import register

__all__ = ['roofline_explorer']

_INTENSITY = np.logspace(-1, 4, 200)


def _setup_roofline(fig):
    log_axes(fig.axes[0], (_INTENSITY[0], _INTENSITY[-1]), (1e10, 3e16), "arithmetic intensity (FLOP/byte)",
             "attainable FLOP/s")


def _draw_roofline(fig, chip, dtype, log10_intensity):
    from ... import hardware, roofline
    from ...units import fmt_flops_per_s

    ax = fig.axes[0]
    c = hardware.get(chip)
    if dtype not in c.peak_flops_per_s:
        return [], f"{chip} has no native {dtype}; it has {', '.join(c.peak_flops_per_s)}"
    F, Wbw = c.flops_per_s(dtype), c.hbm_bytes_per_s
    I = 10 ** log10_intensity
    got = roofline.attainable_flops_per_s(I, F, Wbw)
    artists = [*ax.plot(_INTENSITY, roofline.attainable_flops_per_s(_INTENSITY, F, Wbw), "C0-", lw=2),
               *ax.plot([F / Wbw], [F], "C0o"), ax.axvline(I, color="gray", ls=":"), *ax.plot([I], [got], "ko")]
    bound = "compute" if I >= F / Wbw else "memory"
    return artists, (f"{chip} at {dtype}: ridge F/W = {F / Wbw:.0f} FLOP/byte; a kernel of intensity {I:.3g} is "
                     f"<b>{bound}-bound</b> and can reach {fmt_flops_per_s(got)} = {got / F:.1%} of peak")


def roofline_explorer(chip: str = "h100-sxm", dtype: str = "bf16", log10_intensity: float = 1.0) -> Explorer:
    """Chip and precision dropdowns and an intensity slider over :func:`llmmath.roofline.attainable_flops_per_s`."""
    import ipywidgets as W

    from ... import hardware

    return explorer(_setup_roofline, _draw_roofline, {
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "dtype": W.Dropdown(options=["bf16", "fp8", "int8", "fp4", "fp32"], value=dtype, description="dtype"),
        "log10_intensity": W.FloatSlider(value=log10_intensity, min=-1, max=4, step=0.1, description="log10 I"),
    }, width=6.0)

register('roofline_explorer', roofline_explorer)
