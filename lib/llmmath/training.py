"""Training compute, Chinchilla scaling fits, and the economics of splitting compute.

* ``train_flops``: the 6ND rule (Kaplan et al. 2020, section 2.1: a forward pass
  is ~2 FLOPs per parameter per token, the backward pass twice that), optionally
  with the attention FLOPs over the context.
* ``chinchilla_loss`` / ``chinchilla_optimal``: the parametric law
  ``L(N, D) = E + A / N^alpha + B / D^beta`` of Hoffmann et al., "Training
  Compute-Optimal Large Language Models" (2022), Approach 3, minimized under
  ``C = 6 N D``. Two fits are shipped: the paper's published constants
  (``"hoffmann"``: E 1.69, A 406.4, B 410.7, alpha 0.34, beta 0.28) and the
  refit of Besiroglu et al., "Chinchilla Scaling: A replication attempt"
  (arXiv:2404.10102; ``"epoch"``: E 1.8172, A 482.01, B 2085.43, alpha 0.3478,
  beta 0.3658), which found the published fit inconsistent with the paper's
  other two approaches.
* ``equal_terms_ratio`` and the compute-split model of chapter 7.

Closed-form optimum (Hoffmann et al., eq. 4): with ``G = (alpha A / (beta B))^(1/(alpha+beta))``,
``N* = G (C/6)^(beta/(alpha+beta))`` and ``D* = G^-1 (C/6)^(alpha/(alpha+beta))``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import models
from ._validate import broadcast, finite_result, flag, in_range, non_negative, positive, result, scalar

__all__ = ["ChinchillaFit", "FITS", "train_flops", "mfu", "RECOMPUTE_MODES", "chinchilla_loss", "chinchilla_optimal",
           "tokens_per_param_optimal", "loss_terms_ratio_at_optimum", "sum_of_power_laws_minimum",
           "compute_split", "equal_cost_tokens", "achieved_mfu", "tokens_for_loss", "train_and_serve_flops",
           "train_serve_equal_cost_penalty", "run_mfu", "serving_mfu", "overtraining",
           "deepseek_v3_decode_mfu_ratio", "elementwise_bytes_per_token"]


@dataclasses.dataclass(frozen=True)
class ChinchillaFit:
    """Constants of ``L(N, D) = E + A / N^alpha + B / D^beta`` (loss in nats per token)."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float
    source: str

    def __post_init__(self):
        """Refuse constants that make the law meaningless (complex, NaN, inf, booleans, negative).

        Raises:
            TypeError: a constant that is not a real number, or a ``source`` that is not a string.
            ValueError: ``E`` < 0, or ``A``, ``B``, ``alpha``, ``beta`` not > 0, or NaN/inf.
        """
        for f in ("E", "A", "B", "alpha", "beta"):
            try:
                v = scalar(f, getattr(self, f))
            except (TypeError, ValueError) as e:
                raise type(e)(f"ChinchillaFit: {e}") from None
            if (v < 0) if f == "E" else (v <= 0):
                raise ValueError(f"ChinchillaFit: {f} must be {'>= 0 (the irreducible loss)' if f == 'E' else '> 0'}, "
                                 f"got {v!r}")
            object.__setattr__(self, f, v)
        if not isinstance(self.source, str):
            raise TypeError(f"ChinchillaFit: source must be a string, got {self.source!r}")


FITS = {
    "hoffmann": ChinchillaFit(1.69, 406.4, 410.7, 0.34, 0.28,
                              "Hoffmann et al. 2022 (arXiv:2203.15556), eq. 10, Approach 3 as published"),
    "epoch": ChinchillaFit(1.8172, 482.01, 2085.43, 0.3478, 0.3658,
                           "Besiroglu et al. 2024 (arXiv:2404.10102), Table 1 refit of Approach 3"),
}


def _fit(fit) -> ChinchillaFit:
    if isinstance(fit, ChinchillaFit):
        return fit
    try:
        return FITS[fit]
    except (KeyError, TypeError):
        raise KeyError(f"unknown fit {fit!r}; allowed: {', '.join(FITS)} (or a ChinchillaFit)") from None


RECOMPUTE_MODES = ("none", "selective", "full")


@finite_result
def train_flops(n_params, n_tokens, context=0, model=None, *, recompute: str = "none", causal: bool = True):
    """FLOPs of training on ``n_tokens`` tokens: ``6 N D`` plus attention, plus what recomputation repeats.

    ``n_params`` N: parameters that multiply each token (active parameters; the input
    embedding lookup is no matmul); ``n_tokens`` D. A forward pass costs ``2 N`` per token
    and the backward twice that (Kaplan et al. 2020, section 2.1), hence ``6 N D``. With a
    ``model`` and ``context`` (training sequence length L), each token's attention over the
    sequence adds ``A`` FLOPs forward (``model.attention_flops_per_token``, MLA in its
    non-absorbed training form) and ``3 A`` in all; a token attends to ``L/2`` positions on
    average when ``causal`` (a causal mask skips the upper triangle: the quadratic term halves; a sliding-window
    layer to the exact mean of its window, :meth:`~llmmath.models.Model.causal_mean_positions`),
    to ``L`` when not (Megatron-LM's and Korthikanti et al.'s formulas count the full square). A model's linear
    layers (Gated DeltaNet) add their state's FLOPs, :attr:`~llmmath.models.Model.state_flops_per_token`, in ``A``.

    ``recompute`` adds the work repeated in the backward pass (hardware FLOPs, not model FLOPs):

    * ``"none"``: ``6 N D + 3 A D`` -- the *model* FLOPs, the numerator of MFU;
    * ``"selective"``: recompute the attention core once more: ``+ A D``;
    * ``"full"``: rerun every layer's forward: ``+ 2 N D + A D`` (= ``8 N D + 4 A D``).

    (Korthikanti et al. 2022, section 6: hardware FLOPs with full recomputation are
    ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))``, where the LM head, ``V h`` per token, is not
    recomputed; here "full" repeats all of N, so pass the layers' parameters as N and add the
    head's ``6 V h D`` yourself to match them exactly.)

    Broadcasts over ``n_params``, ``n_tokens`` and ``context``.

    Raises:
        ValueError: negative or NaN inputs; a non-zero ``context`` without ``model``
            (the attention FLOPs need the model's shape: pass ``model=...``); unknown
            ``recompute`` (allowed: none, selective, full).
        TypeError: a non-boolean ``causal``.
    """
    if recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {RECOMPUTE_MODES}, got {recompute!r}")
    causal = flag("causal", causal)
    N, D = non_negative("n_params", n_params), non_negative("n_tokens", n_tokens)
    L = non_negative("context", context)
    if model is None and np.any(L):
        raise ValueError(f"context={context!r} needs model=... (a catalog name or Model): the attention FLOPs "
                         f"over the context depend on the model's layers and heads; without a model "
                         f"only 6 N D is counted, so leave context=0")
    N, D, L = broadcast(n_params=N, n_tokens=D, context=L)
    weight_passes = 8.0 if recompute == "full" else 6.0
    flops = weight_passes * N * D
    if model is not None:
        m = models.get(model)
        per_pos = float(m.attention_flops_per_token(1.0, absorbed=False)) / float(m.cached_positions(1.0))
        if causal:                      # a windowed layer's first w tokens see fewer positions (exact mean)
            seen = np.where(L > 0, m.causal_mean_positions(np.where(L > 0, L, 1.0)), 0.0)
        else:
            seen = m.cached_positions(L)
        attn = per_pos * np.asarray(seen) + m.state_flops_per_token    # linear layers' state: context-free
        attention_passes = 3.0 if recompute == "none" else 4.0
        flops = flops + attention_passes * D * attn
    return result(flops)


@finite_result
def elementwise_bytes_per_token(model, *, fp8: bool = False, recompute: str = "none") -> dict:
    """HBM bytes one training token moves through the kernels that are not matmuls or attention, forward and
    backward over every layer, by kind (bytes; a dict summed by ``"total"``).

    Counted from Megatron-Core's fused layer (Transformer Engine): each fused kernel reads its inputs once and
    writes its outputs once, 2 bytes a value (bf16). Per token and layer, with ``h`` the model width, ``q``/``k`` the
    rotated query/key widths (MLA: the rope parts), ``f`` the MLP width:

    * **norms** (two RMSNorms): forward read h, write h each; backward read x and dy, write dx: ``4h + 6h``;
    * **rotary embedding** (fused RoPE) on q and k: read and write, forward and backward: ``4 (q + k)``;
    * **residual adds** (bias-dropout-add): forward read 2h, write h each; backward the gradient's sum into the
      residual stream, the same again: ``6h + 6h``;
    * **activation** (fused SwiGLU, per MLP and per routed copy of a token): forward read 2f, write f; backward read
      gate, up and dy, write two gradients: ``3f + 5f`` (an ungated MLP: ``2f + 3f``);
    * **MoE token movement** (fused permute, unpermute): permute reads a token and writes its ``k`` copies, unpermute
      reads the ``k`` results and writes their weighted sum, each again in the backward: ``4 (1 + k) h``; the router's
      softmax and top-k read and write ``E`` scores, forward and backward: ``4 E``;
    * **loss** (Megatron's vocab-parallel cross entropy, once a token): read the bf16 logits and keep the softmax in
      fp32, then in the backward read it and write the bf16 gradient: ``(2 + 4 + 4 + 2) V`` bytes;
    * **fp8 casts** (``fp8``: the linear layers in fp8, Transformer Engine's recipes): on the backward each linear
      layer's output gradient is cast and transposed (read in bf16, written twice in fp8: the row-wise copy and the
      transposed one the weight gradient needs), 4 bytes a value of its output width (a routed copy's expert layers
      included); on the forward, the norms and the activation write their fp8 outputs themselves (fused), and only
      the attention output is cast before the output projection, 4 bytes a value.

    ``recompute="full"`` repeats the layers' forward kernels (``"selective"`` reruns only attention's core, which
    moves its data inside the attention kernel). Widths per layer are the model's (dense layers ``d_ff``, MoE layers
    ``k`` routed copies of ``d_ff_expert`` plus the shared experts). Llama 3.1 8B in bf16: 14.4 MB a token over its
    32 layers and 1.5 MB for its loss, against 45 GFLOP of matmuls (6 x 7.5 billion weights).

    Raises:
        ValueError: unknown ``recompute`` (allowed: none, selective, full).
        KeyError: unknown model.
    """
    if recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {RECOMPUTE_MODES}, got {recompute!r}")
    m = models.get(model)
    h, b = m.d_model, 2.0
    if m.is_mla:
        q, k_w = m.n_heads * m.qk_rope_head_dim, m.qk_rope_head_dim
        qkv_out = m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim) * 2 + m.n_heads * m.v_head_dim
        attn_in = m.n_heads * m.v_head_dim
    else:
        q, k_w = m.n_heads * m.head_dim, m.n_kv_heads * m.head_dim
        qkv_out, attn_in = q + 2 * k_w, m.n_heads * m.head_dim
    gate = m.gated_mlp

    def mlp(f):                              # activation forward and backward values, fp8 cast widths
        act = (3 * f + 5 * f) if gate else (2 * f + 3 * f)
        return act, (2 * f if gate else f) + h

    fwd_share = {"norms": 4 * h, "rotary": 2 * (q + k_w), "residual": 6 * h}   # the forward's part of each
    per_layer_dense = {"norms": 10 * h, "rotary": 4 * (q + k_w), "residual": 12 * h}
    attn_casts = qkv_out + h + attn_in
    moe_layers, dense_layers = m.n_moe_layers, m.n_layers - m.n_moe_layers
    act_d, cast_d = mlp(m.d_ff) if dense_layers else (0, 0)
    out = {k: v * b * m.n_layers for k, v in per_layer_dense.items()}
    out["activation"] = b * dense_layers * act_d
    casts = m.n_layers * attn_casts + dense_layers * cast_d
    fwd = sum(fwd_share.values()) * m.n_layers + dense_layers * (3 * m.d_ff if gate else 2 * m.d_ff)
    if m.is_moe:
        k = m.experts_per_token
        act_e, cast_e = mlp(m.d_ff_expert)
        copies = k + m.n_shared_experts
        out["activation"] += b * moe_layers * copies * act_e
        out["moe token movement"] = b * moe_layers * (4 * (1 + k) * h + 4 * m.n_experts)
        casts += moe_layers * copies * cast_e
        fwd += moe_layers * (copies * (3 if gate else 2) * m.d_ff_expert + 2 * (1 + k) * h + 2 * m.n_experts)
    out["loss"] = (2 + 4 + 4 + 2) * m.vocab
    out["fp8 casts"] = 4.0 * casts if fp8 else 0.0
    out["recomputed forward"] = b * fwd if recompute == "full" else 0.0
    out["total"] = sum(out.values())
    return out


def mfu(model_flops, step_time_s, n_gpus, peak_flops_per_s):
    """Model FLOPs utilization of one step: ``model_flops / (step_time_s * n_gpus * peak_flops_per_s)``.

    ``model_flops``: :func:`train_flops` with ``recompute="none"`` (recomputation is
    hardware work, not model work: counting it gives the *hardware* FLOPs utilization, HFU).
    ``peak_flops_per_s``: one GPU's dense peak at the precision quoted. Broadcasts.

    Raises:
        ValueError: negative FLOPs, non-positive time, GPUs or peak.
    """
    F, t, n, P = broadcast(model_flops=non_negative("model_flops", model_flops),
                           step_time_s=positive("step_time_s", step_time_s), n_gpus=positive("n_gpus", n_gpus),
                           peak_flops_per_s=positive("peak_flops_per_s", peak_flops_per_s))
    return result(F / (t * n * P))


@finite_result
def chinchilla_loss(n_params, n_tokens, fit="hoffmann"):
    """``E + A / N^alpha + B / D^beta`` (nats per token). Broadcasts over N and D.

    Raises:
        ValueError: non-positive N or D. KeyError: unknown fit name.
    """
    f = _fit(fit)
    N, D = broadcast(n_params=positive("n_params", n_params), n_tokens=positive("n_tokens", n_tokens))
    return result(f.E + f.A / N**f.alpha + f.B / D**f.beta)


@finite_result
def chinchilla_optimal(compute_flops, fit="hoffmann"):
    """``(N*, D*)``: the parameters and tokens that minimize the fitted loss at ``C = 6 N D`` FLOPs.

    Raises:
        ValueError: non-positive compute. KeyError: unknown fit name (allowed: hoffmann, epoch).
    """
    f = _fit(fit)
    C = positive("compute_flops", compute_flops)
    G = (f.alpha * f.A / (f.beta * f.B)) ** (1.0 / (f.alpha + f.beta))
    N = G * (C / 6.0) ** (f.beta / (f.alpha + f.beta))
    D = (C / 6.0) / N
    return result(N), result(D)


@finite_result
def tokens_per_param_optimal(compute_flops, fit="hoffmann"):
    """``D* / N*`` at the compute-optimal point (the famous rule of thumb says ~20)."""
    N, D = chinchilla_optimal(compute_flops, fit)
    return result(np.asarray(D) / np.asarray(N))


def loss_terms_ratio_at_optimum(fit="hoffmann"):
    """``(A / N*^alpha) / (B / D*^beta)`` at the compute optimum: exactly ``beta / alpha``.

    Minimizing ``A N^-alpha + B D^-beta`` on ``N D = C/6`` sets
    ``alpha A N^-alpha = beta B D^-beta``; the two reducible terms are equal only
    when the exponents are.
    """
    f = _fit(fit)
    return f.beta / f.alpha


@finite_result
def sum_of_power_laws_minimum(a, p, b, q):
    """Minimize ``f(x) = a x^p + b x^-q`` over ``x > 0``: returns ``(x*, term1 / term2 at x*)``.

    ``f'(x) = 0`` gives ``p a x^p = q b x^-q``, so ``x* = (q b / (p a))^(1/(p+q))`` and
    the two terms stand in the ratio ``q / p`` at the minimum: equal only for ``p = q``.
    """
    a, p, b, q = broadcast(a=positive("a", a), p=positive("p", p), b=positive("b", b), q=positive("q", q))
    x = (q * b / (p * a)) ** (1.0 / (p + q))
    return result(x), result(q / p)


def _mfu(name, value):
    return in_range(name, value, 0.0, 1.0, low_open=True)  # a fraction of peak: 0 < MFU <= 1


def _rl_cost(value):
    return in_range("rl_flops_per_param_token", value, 2.0, 6.0)  # a forward (2) .. forward + backward (6)


@finite_result
def compute_split(pretrain_tokens, rl_tokens, inference_tokens, active_params,
                  rl_flops_per_param_token: float = 6.0, mfu_pretrain: float = 0.4, mfu_rl: float = 0.15,
                  mfu_inference: float = 0.15):
    """Machine time (in FLOP-equivalents at peak) for pre-training, RL and inference, and their shares.

    Pre-training: ``6 N D_pre / mfu_pretrain``; RL: ``c N D_rl / mfu_rl`` with
    ``c`` between 2 (rollouts only) and 6 (every token trained on); inference:
    ``2 N D_inf / mfu_inference``. Dividing by the model FLOPs utilization turns
    FLOPs into machine time. The MFU defaults are round guesses (training ~40%;
    decode-heavy RL rollouts and serving far lower), to be varied, not trusted.

    Returns ``(costs, shares)``: two dicts keyed ``pretrain``, ``rl``, ``inference``.

    Raises:
        ValueError: negative token counts, all three zero (shares of nothing are
            undefined), ``active_params`` <= 0, an MFU outside (0, 1],
            ``rl_flops_per_param_token`` outside [2, 6], shapes that do not broadcast.
    """
    D_pre, D_rl, D_inf, N, c, u_pre, u_rl, u_inf = broadcast(
        pretrain_tokens=non_negative("pretrain_tokens", pretrain_tokens),
        rl_tokens=non_negative("rl_tokens", rl_tokens),
        inference_tokens=non_negative("inference_tokens", inference_tokens),
        active_params=positive("active_params", active_params),
        rl_flops_per_param_token=_rl_cost(rl_flops_per_param_token),
        mfu_pretrain=_mfu("mfu_pretrain", mfu_pretrain), mfu_rl=_mfu("mfu_rl", mfu_rl),
        mfu_inference=_mfu("mfu_inference", mfu_inference))
    if np.any(D_pre + D_rl + D_inf == 0):
        raise ValueError("pretrain_tokens, rl_tokens and inference_tokens are all 0: the shares of zero "
                         "compute are undefined; allowed: at least one of them > 0")
    costs = {
        "pretrain": 6.0 * N * D_pre / u_pre,
        "rl": c * N * D_rl / u_rl,
        "inference": 2.0 * N * D_inf / u_inf,
    }
    total = costs["pretrain"] + costs["rl"] + costs["inference"]
    return ({k: result(v) for k, v in costs.items()}, {k: result(v / total) for k, v in costs.items()})


@finite_result
def achieved_mfu(model_flops, gpu_hours, peak_flops_per_s):
    """Model FLOPs utilization a run implies: ``model_flops / (gpu_hours * 3600 * peak_flops_per_s)``.

    ``model_flops``: the FLOPs the model needed (6 N D for pre-training, 2 N per served
    token); ``gpu_hours``: GPU-hours spent; ``peak_flops_per_s``: one GPU's dense peak at the
    precision you quote the MFU against. Broadcasts. A result above 1 means the inputs
    disagree (FLOPs counted too high, hours too low, or a peak taken with sparsity).

    Raises:
        ValueError: negative FLOPs, non-positive hours or peak, shapes that do not broadcast.
    """
    F, H, P = broadcast(model_flops=non_negative("model_flops", model_flops),
                        gpu_hours=positive("gpu_hours", gpu_hours),
                        peak_flops_per_s=positive("peak_flops_per_s", peak_flops_per_s))
    return result(F / (H * 3600.0 * P))


@finite_result
def equal_cost_tokens(pretrain_tokens, rl_flops_per_param_token: float = 6.0, mfu_pretrain: float = 0.4,
                      mfu_rl: float = 0.15, mfu_inference: float = 0.15):
    """RL and inference tokens whose machine time equals pre-training's: ``(D_rl, D_inf)``.

    ``D_rl = D_pre (6 / mfu_pretrain) / (c / mfu_rl)``; ``D_inf = D_pre (6 / mfu_pretrain) / (2 / mfu_inference)``.

    Raises:
        ValueError: negative tokens, an MFU outside (0, 1], ``rl_flops_per_param_token``
            outside [2, 6], shapes that do not broadcast.
    """
    D, c, u_pre, u_rl, u_inf = broadcast(
        pretrain_tokens=non_negative("pretrain_tokens", pretrain_tokens),
        rl_flops_per_param_token=_rl_cost(rl_flops_per_param_token),
        mfu_pretrain=_mfu("mfu_pretrain", mfu_pretrain), mfu_rl=_mfu("mfu_rl", mfu_rl),
        mfu_inference=_mfu("mfu_inference", mfu_inference))
    per_pre = 6.0 / u_pre
    d_rl = D * per_pre / (c / u_rl)
    d_inf = D * per_pre / (2.0 / u_inf)
    return result(d_rl), result(d_inf)


@finite_result(allow_inf=True)
def tokens_for_loss(n_params, target_loss, fit="hoffmann"):
    """Training tokens D that bring a model of ``n_params`` to ``target_loss`` under the fitted law.

    ``D = (B / (L - E - A / N^alpha))^(1/beta)``; ``inf`` where the model is too small
    ever to reach the target (``L <= E + A / N^alpha``), documented rather than an error
    so that sweeps over N stay vectorized.

    Raises:
        ValueError: non-positive N or loss. KeyError: unknown fit.
    """
    f = _fit(fit)
    N, L = broadcast(n_params=positive("n_params", n_params), target_loss=positive("target_loss", target_loss))
    gap = L - f.E - f.A / N**f.alpha
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        D = np.where(gap > 0, (f.B / np.where(gap > 0, gap, 1.0)) ** (1.0 / f.beta), np.inf)
    return result(D)


@finite_result(allow_inf=True)
def train_and_serve_flops(n_params, target_loss, inference_tokens, fit="hoffmann"):
    """``(train_flops, inference_flops)`` of reaching ``target_loss`` at size N, then serving ``inference_tokens``.

    Training: ``6 N D(N)`` with D from :func:`tokens_for_loss`; serving: ``2 N D_inf``.
    The first falls with N (a bigger model needs fewer tokens), the second rises:
    chapter 7 asks whether their sum is smallest where they are equal.
    """
    N, L, D_inf = broadcast(n_params=positive("n_params", n_params), target_loss=positive("target_loss", target_loss),
                            inference_tokens=non_negative("inference_tokens", inference_tokens))
    D = np.asarray(tokens_for_loss(N, L, fit))
    with np.errstate(over="ignore", invalid="ignore"):
        train = 6.0 * N * D
    serve = 2.0 * N * D_inf
    if not np.all(np.isfinite(serve)):
        raise ValueError(f"train_and_serve_flops: the serving compute 2 N D_inf is not finite: float64 overflowed; "
                         f"n_params (max {np.max(N):g}) and inference_tokens (max {np.max(D_inf):g}) are too large")
    return result(train), result(serve)


def train_and_serve_chip_s(n_params, target_loss, inference_tokens, train_chip="h100-sxm", serve_chip="h100-sxm",
                           train_mfu=0.40, serve_mfu=0.14, train_dtype="bf16", serve_dtype="bf16", fit="hoffmann"):
    """``(train_chip_s, serve_chip_s)``: :func:`train_and_serve_flops` in chip-seconds on real chips.

    Each phase's FLOPs over the FLOP/s it delivers, ``F(chip, dtype) x MFU``: training
    ``6 N D(N) / (F_t u_t)``, serving ``2 N D_inf / (F_s u_s)``. Claim 28's "make the two
    costs equal" is about costs, and a chip-second of serving buys fewer useful FLOPs
    than one of training (decode is memory-bound), so the currency moves the optimum.
    Defaults: training at 40% MFU (Llama 3 405B reports 38-43%, "The Llama 3 Herd of
    Models", Table 4); serving at 14%, DeepSeek-V3's production decode on H800s
    (2 x 37B active x 14.8K tokens/s per 8-GPU node over 8 x 989 TFLOP/s bf16;
    open-infra-index day 6), the MFU chapter 7's check of claim 29 derives.

    Raises:
        ValueError: an MFU outside (0, 1], non-positive sizes. KeyError: unknown chip, or a
        dtype the chip has no peak for.
    """
    from . import hardware

    u_t = in_range("train_mfu", train_mfu, 0.0, 1.0, low_open=True)
    u_s = in_range("serve_mfu", serve_mfu, 0.0, 1.0, low_open=True)
    f_t = hardware.get(train_chip).flops_per_s(train_dtype)
    f_s = hardware.get(serve_chip).flops_per_s(serve_dtype)
    train, serve = train_and_serve_flops(n_params, target_loss, inference_tokens, fit)
    with np.errstate(over="ignore", invalid="ignore"):
        return result(np.asarray(train) / (f_t * np.asarray(u_t))), result(np.asarray(serve) / (f_s * np.asarray(u_s)))


def train_serve_equal_cost_penalty(inference_tokens, target_loss=2.0, fit="epoch"):
    """``(N_equal, cost(N_equal) / min cost)``: how far 'make training and serving cost the same' is from optimal.

    Total compute ``6 N D(N) + 2 N D_inf`` over model size N, with D(N) the tokens
    that reach ``target_loss``; N_equal is the crossing of the two terms nearest the
    minimum (there can be two: D(N) falls all the way, but ever more slowly, toward the
    tokens an infinite model would need, so past some size ``6 N D(N)`` grows again).

    Raises:
        ValueError: non-positive inputs, or no crossing. TypeError: an array (this
            searches one curve: loop over the values you want).
    """
    inference_tokens = float(positive("inference_tokens", scalar("inference_tokens", inference_tokens)))
    target_loss = float(positive("target_loss", scalar("target_loss", target_loss)))
    N = np.logspace(9, 13, 8001)
    tr, inf = train_and_serve_flops(N, target_loss, inference_tokens, fit)
    tot = tr + inf
    i = int(np.nanargmin(tot))
    sign = np.sign(tr - inf)
    cross = np.where(np.isfinite(tr[:-1]) & (sign[:-1] != sign[1:]))[0]
    if cross.size == 0:
        raise ValueError(f"training and serving compute never cross for inference_tokens={inference_tokens:g} "
                         f"at loss {target_loss} (serving too small next to training); the heuristic has no point here")
    j = int(cross[np.argmin(np.abs(cross - i))])
    return float(N[j]), float(tot[j] / tot[i])


def run_mfu(run: str, peak_dtype: str = "bf16") -> float:
    """The MFU a catalogued pre-training run implies: ``6 N_act D / (GPU-hours x 3600 x F)``.

    ``run``: a key of ``data/training_runs.toml`` that reports ``gpu_hours`` and ``gpu``
    (Llama 3.1 8B/70B/405B on H100, DeepSeek-V3 on H800, counted at the H100 SXM's
    tensor-core peak); ``peak_dtype``: the precision of the peak F (dense).

    Raises:
        KeyError: unknown run, or a run without GPU-hours (the message lists those with them).
    """
    from . import _catalog, hardware

    runs = _catalog.load("training_runs.toml")["runs"]
    timed = [k for k, r in runs.items() if "gpu_hours" in r]
    if run not in timed:
        raise KeyError(f"no catalogued run {run!r} with GPU-hours; allowed: {', '.join(timed)}")
    r = runs[run]
    flops = 6.0 * models.get(r["model"]).active_params * r["tokens"]
    return float(achieved_mfu(flops, r["gpu_hours"], hardware.get(r["gpu"]).flops_per_s(peak_dtype)))


@finite_result
def serving_mfu(active_params, tokens_per_s, n_chips, peak_flops_per_s):
    """MFU of a service that decodes ``tokens_per_s`` on ``n_chips``: ``2 N_act x rate / (n_chips x F)``.

    (DeepSeek's published 14.8k output tokens/s per 8-GPU H800 node, *DeepSeek-V3/R1
    Inference System Overview*, 2025, gives 2 x 37B x 14,800 / (8 x 989.5 T) = 13.8%.)
    Broadcasts.

    Raises:
        ValueError: non-positive parameters, chips or peak; negative rate.
    """
    N, r, n, F = broadcast(active_params=positive("active_params", active_params),
                           tokens_per_s=non_negative("tokens_per_s", tokens_per_s),
                           n_chips=positive("n_chips", n_chips), peak_flops_per_s=positive("peak_flops_per_s",
                                                                                           peak_flops_per_s))
    return result(2.0 * N * r / (n * F))


#: Seconds in a month of 30.44 days (a year / 12), as the speaker's "2 months = 5.2e6 s".
SECONDS_PER_MONTH = 365.25 * 86400 / 12


def overtraining(tokens_per_s, deployment_months, active_params, fit="epoch"):
    """Claim 31's estimate, both ways: how far past compute-optimal a model served this much is trained.

    Served tokens ``D_inf = rate x months``; by the equal-tokens heuristic (claim 29) the
    pre-training tokens ``D_pre = D_inf``. Two multiples of it:

    * ``per_20N``: ``D_pre / (20 N_act)`` -- against Chinchilla's rule of thumb at the
      model's *size* (the speaker's "100x");
    * ``per_optimal``: ``D_pre / D*(6 N_act D_pre)`` -- against the compute-optimal tokens
      of the same *compute* under ``fit`` (Hoffmann et al. or Epoch's refit).

    Returns a dict of arrays (broadcast over the inputs): ``served_tokens``, ``pretrain_tokens``,
    ``per_20N``, ``per_optimal``.

    Raises:
        ValueError: non-positive rate, months or parameters. KeyError: unknown fit.
    """
    r, m, N = broadcast(tokens_per_s=positive("tokens_per_s", tokens_per_s),
                        deployment_months=positive("deployment_months", deployment_months),
                        active_params=positive("active_params", active_params))
    D = r * m * SECONDS_PER_MONTH
    _, d_opt = chinchilla_optimal(6.0 * N * D, fit)
    return {"served_tokens": result(D), "pretrain_tokens": result(D), "per_20N": result(D / (20.0 * N)),
            "per_optimal": result(D / np.asarray(d_opt))}


def deepseek_v3_decode_mfu_ratio() -> float:
    """DeepSeek-V3's published decode MFU over its pre-training MFU (same model, same chip: the peak cancels).

    Decode: 14.8k output tokens/s per 8-GPU H800 node (*DeepSeek-V3/R1 Inference System
    Overview*, DeepSeek open-infra, 2025) through :func:`serving_mfu`; pre-training: the
    report's 2,664K H800 GPU-hours for 14.8T tokens through :func:`run_mfu`. About 0.39.
    """
    from . import hardware

    decode = serving_mfu(models.get("deepseek-v3").active_params, 14.8e3, 8, hardware.get("h100-sxm").flops_per_s("bf16"))
    return float(decode) / run_mfu("deepseek-v3")
