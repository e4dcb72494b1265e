"""Checks of chapter 9 (ciphers, reversible networks, memory for compute): claims 38, 39, 40."""

from __future__ import annotations

import numpy as np

from ...demos import adversarial, reversible
from ... import ciphers, memory
from ._sheets import require_sheets
from ..claims import Verdict, register, require

@register(38)
def _check_38() -> Verdict:
    m = adversarial.trained_digits_mlp()
    _, _, X, y = adversarial.digits_split()
    clean = float((m.predict(X) == y).mean())
    require(clean > 0.95, 38, f"the reference classifier only reaches {clean:.1%}")
    ok = m.predict(X) == y
    adv = adversarial.min_flip_eps(m, X[ok], y[ok])
    rnd = adversarial.min_flip_eps(m, X[ok], y[ok], direction="random")
    med_adv = float(np.median(adv))
    med_rnd = float(np.median(rnd))  # inf counts as "larger": the median is then inf or finite
    step = 1 / 16  # the digits' own pixel resolution: 17 grey levels, 0..16
    require(med_adv < 2 * step, 38, f"median flipping perturbation {med_adv:.3f} exceeds two grey levels")
    require(med_rnd > 3 * med_adv, 38, f"random sign noise flips as easily ({med_rnd:.3f} vs {med_adv:.3f})")
    feistel = ciphers.avalanche_feistel(8)
    sha = ciphers.avalanche_sha256(300)
    require(abs(feistel.mean() / 64 - 0.5) < 0.02 and abs(sha.mean() / 256 - 0.5) < 0.02, 38,
             f"avalanche off half: Feistel {feistel.mean():.1f}/64, SHA-256 {sha.mean():.1f}/256")
    one_pixel = float((m.predict(np.clip(X + step * np.eye(64)[np.random.default_rng(0).integers(0, 64, len(y))], 0, 1))
                       != m.predict(X)).mean())
    return Verdict(38, "holds",
                   f"a perturbation of {med_adv:.3f} of the pixel range per pixel (median; about "
                   f"{med_adv / step:.1f} grey levels) flips a {clean:.0%}-accurate digit classifier along the "
                   f"gradient sign, while random signs must be {med_rnd / med_adv:.0f}x larger to flip as many; a cipher is built so that "
                   f"every single-bit change flips half the output, a classifier so that almost none does -- "
                   f"adversarial directions are the exception, found by search",
                   {"clean test accuracy": f"{clean:.1%}",
                    "smallest flipping L-inf perturbation, median: gradient sign / random sign":
                    f"{med_adv:.3f} / {med_rnd:.3f}",
                    "predictions changed by one pixel raised one grey level": f"{one_pixel:.1%}",
                    "avalanche, one input bit flipped: 8-round Feistel / SHA-256":
                    f"{feistel.mean():.1f} of 64 / {sha.mean():.1f} of 256 output bits"})


@register(39)
def _check_39() -> Verdict:
    import tracemalloc

    X, y = adversarial.load_digits()
    xb, yb = X[:512], y[:512]
    net = reversible.init_revnet(64, 8, seed=1)
    _, g_store = reversible.loss_and_grads(net, xb, yb, "store")
    _, g_rec = reversible.loss_and_grads(net, xb, yb, "recompute")
    err = max(float(np.max(np.abs(a - b))) for a, b in zip(g_store, g_rec))
    require(err < 1e-10, 39, f"recomputed gradients differ from stored ones by {err:.1e}")
    peaks = {}
    for mode in ("store", "recompute"):
        for depth in (8, 32):
            n = reversible.init_revnet(64, depth, seed=1)
            tracemalloc.start()
            reversible.loss_and_grads(n, xb, yb, mode)
            peaks[(mode, depth)] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    grow_store = peaks[("store", 32)] / peaks[("store", 8)]
    grow_rec = peaks[("recompute", 32)] / peaks[("recompute", 8)]
    require(grow_store > 2 and grow_rec < 1.2, 39,
             f"peak memory 8 -> 32 blocks grows {grow_store:.2f}x stored, {grow_rec:.2f}x recomputed")
    e32 = reversible.reconstruction_error(reversible.init_revnet(64, 32, gain=1.5, dtype=np.float32),
                                          X[:256].astype(np.float32))
    return Verdict(39, "holds",
                   "a Feistel-style coupling block is exactly invertible in exact arithmetic, so the backward pass "
                   "can rebuild each block's input from its output: gradients match stored-activation backprop, "
                   "and peak memory stops growing with depth -- at the price of one extra forward pass and a "
                   "reconstruction drift that grows with depth in low precision",
                   {"max gradient difference, recomputed vs stored (float64)": f"{err:.1e}",
                    "peak memory 8 -> 32 blocks, stored / recomputed": f"{grow_store:.2f}x / {grow_rec:.2f}x",
                    "reconstruction error after 32 blocks, float32 (gain 1.5)": f"{e32:.1e}"})


@register(40)
def _check_40() -> Verdict:
    require_sheets(40, chips=['b200', 'h100-sxm', 'tpu-v5e'], models_=['deepseek-v3', 'llama-3.1-70b',
                   'llama-3.1-8b'])
    ratios = {}
    for model in ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"):
        for chip in ("h100-sxm", "b200", "tpu-v5e"):
            read, rec = memory.kv_read_vs_recompute_s(model, chip, context=4096)
            ratios[(model, chip)] = rec / read
    # Hand anchor: Llama-3.1-70B on an H100, 4096 tokens of context:
    # recompute 2 x 69.5e9 + 80 x 4 x 64 x 128 x 4096 FLOPs over 989.5e12; read 327,680 bytes over 3.35e12 B/s.
    n_mm = 70_553_706_496 - 128_256 * 8_192
    hand = ((2 * n_mm + 80 * 4 * 64 * 128 * 4096) / 989.5e12) / (327_680 / 3.35e12)
    require(abs(ratios[("llama-3.1-70b", "h100-sxm")] / hand - 1) < 1e-9, 40, "KV read/recompute ratio changed")
    # Two more by hand on a B200 (datasheet: 2.25 PFLOP/s bf16 dense, 8 TB/s), configs from config.json:
    # Llama-3.1-8B: N_mm = 8,030,261,248 - 128,256 x 4,096; a = 32 layers x 4 x 32 heads x 128; beta = 131,072 B.
    # DeepSeek-V3: N_mm = 37,552,297,472 - 129,280 x 7,168 (claim 9's count); recomputing is prefill, so MLA in
    # its non-absorbed form, 128 heads x (2 x 192 + 2 x 128) = 81,920 FLOPs per position per layer, 61 layers;
    # beta = 61 x (512 + 64) x 2 bytes.
    more = {"llama-3.1-8b": (8_030_261_248 - 128_256 * 4_096, 32 * 4 * 32 * 128, 2 * 32 * 8 * 128 * 2),
            "deepseek-v3": (37_552_297_472 - 129_280 * 7_168, 61 * 128 * (2 * 192 + 2 * 128), 61 * 576 * 2)}
    for m_, (nmm_, a_, beta_) in more.items():
        h_ = ((2 * nmm_ + a_ * 4096) / 2.25e15) / (beta_ / 8e12)
        require(abs(ratios[(m_, "b200")] / h_ - 1) < 1e-9, 40,
                f"{m_} on b200: recompute / read {ratios[(m_, 'b200')]:.0f}x vs hand {h_:.0f}x")
    lo = min(ratios.values())
    require(lo > 100, 40, f"reading a cached token is now only {lo:.0f}x cheaper than recomputing it")
    # The other direction: training activations, where capacity binds (GPT-3 175B layer, s=2048, b=1, TP8 + SP).
    args = (2048, 1, 12288, 96, 8, True)
    keep = memory.activation_bytes_per_layer(*args)
    sel = memory.activation_bytes_per_layer(*args, recompute="selective")
    full = memory.activation_bytes_per_layer(*args, recompute="full")
    return Verdict(40, "holds if",
                   f"holds when the memory is read back soon enough: a cached token's K,V cost {lo:.0f}-"
                   f"{max(ratios.values()):.0f}x less to read than to recompute; but where capacity binds -- "
                   f"training activations -- the profitable trade runs the other way (selective recomputation "
                   f"keeps {sel / keep:.0%} of a GPT-3 layer's activations for a few percent more FLOPs)",
                   {"KV: recompute / read time, per token (L=4096)":
                    ", ".join(f"{m} on {c} {r:.0f}x" for (m, c), r in ratios.items()),
                    "GPT-3 175B layer, s=2048, TP8+SP: none / selective / full recompute":
                    f"{keep / 1e6:.0f} / {sel / 1e6:.0f} / {full / 1e6:.1f} MB per GPU"})
