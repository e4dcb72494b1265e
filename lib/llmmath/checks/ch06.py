"""Checks of chapter 6 (pipelining): claims 20, 21, 22, 24, 25, 26."""

from __future__ import annotations

import numpy as np

from .. import hardware, models, parallelism, serving
from ..claims import Verdict, register, require

@register(20)
def _check_20() -> Verdict:
    rows = {}
    need = {}
    for key in ("hgx-h100", "gb200-nvl72", "gb300-nvl72"):
        sy = hardware.system(key)
        up, out = sy.scale_up_bytes_per_s_per_package, sy.scale_out_bytes_per_s_per_package
        r = parallelism.boundary_traffic_ratio("deepseek-v3", np.arange(1, 9), 64, up, out)
        # hand: 2 k layers beta_out / beta_up x (dispatch+combine bytes)/(2 x activation bytes) x 63/64
        hand = 8 * 3 * 63 / 64 * np.arange(1, 9) * out / up / 2
        require(np.allclose(r, hand), 20, f"{key}: ratio {r[0]:.3f} vs hand {hand[0]:.3f}")
        need[key] = int(np.argmax(r >= 1)) + 1
        rows[f"{key} (scale-up/out {up / out:.0f}x)"] = f"ratio at 1 layer/stage {r[0]:.2f}; >= 1 from {need[key]} layers"
    require(max(need.values()) <= 4, 20, f"a stage now needs {max(need.values())} layers to hide its boundary")
    return Verdict(20, "holds",
                   "per token, a stage boundary carries one activation while every MoE layer inside the stage "
                   "moves it to k experts and back; with DeepSeek-V3's k = 8 the in-rack traffic exceeds the "
                   "boundary's (scaled by the ~9-18x bandwidth gap) with 1-2 layers per stage",
                   rows)


@register(21)
def _check_21() -> Verdict:
    one = serving.decode_step("deepseek-v3", "gb200", 2048, 8192, n_chips=64, weight_dtype="fp8", check_capacity=False)
    for P in (2, 4, 8):
        d = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, P, 2048, 8192, weight_dtype="fp8")
        require(abs(d.stage_s * P / one.time_s - 1) < 1e-12, 21, "stages do not add up to the whole")
        require(abs(d.chip_s_per_token / one.cost_chip_s_per_token - 1) < 1e-12, 21, "cost per token changed")
    return Verdict(21, "holds",
                   "splitting the layers over P stages gives each stage 1/P of the FLOPs, weight bytes and KV bytes; "
                   "summed over stages the work per token is unchanged, so chip-seconds per token are identical",
                   {"DeepSeek-V3 fp8, 64 GB200 per stage, B=2048, L=8192": f"step {one.time_s * 1e3:.2f} ms = "
                    f"P x stage time for P = 1, 2, 4, 8"})


@register(22)
def _check_22() -> Verdict:
    rows = {}
    for P in (1, 2, 4):
        m = parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, batch=64, context=32768, weight_dtype="fp8")
        rows[f"P={P}: weights / KV per GPU"] = f"{m.weight_bytes / 1e9:.1f} GB / {m.kv_bytes / 1e9:.1f} GB"
    w = [parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, weight_dtype="fp8").weight_bytes for P in (1, 2, 4)]
    require(abs(w[0] / w[1] - 2) < 1e-9 and abs(w[0] / w[2] - 4) < 1e-9, 22, "weights per GPU do not fall as 1/P")
    return Verdict(22, "holds if",
                   "holds for the weights (per-GPU weight bytes fall as 1/P) but not for the KV cache, which stays "
                   "constant (claim 25); note that with wide EP the replicated non-expert weights (17 GB at fp8 for "
                   "DeepSeek-V3) outweigh each GPU's share of the experts",
                   rows)


@register(24)
def _check_24() -> Verdict:
    lat = parallelism.hop_latencies()
    hop = lat["deepseek-ib-cross-leaf-64B"]["seconds"]
    one = serving.decode_step("deepseek-v3", "gb200", 2048, 8192, n_chips=64, weight_dtype="fp8", check_capacity=False)
    rows = {}
    for P in (2, 4, 8):
        d = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, P, 2048, 8192, hop_latency_s=hop, weight_dtype="fp8")
        extra = d.token_latency_s / one.time_s - 1
        require(extra < 0.05, 24, f"P={P}: hops add {extra:.1%} to the step")
        rows[f"P={P}"] = f"latency {d.token_latency_s * 1e3:.3f} ms vs {one.time_s * 1e3:.3f} ms unpipelined (+{extra:.2%})"
    # The speaker's guess of a few ms per hop would instead dominate:
    guess = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, 4, 2048, 8192, hop_latency_s=3e-3, weight_dtype="fp8")
    return Verdict(24, "holds",
                   f"forward-only pipelining with P micro-batches has no bubble, so per-token latency is the "
                   f"unpipelined step plus P network hops; measured hops are microseconds ({hop * 1e6:.1f} us across "
                   f"InfiniBand leaves), not the 'few ms' guessed, so the added latency is well under 1%",
                   {**rows, "if a hop took 3 ms (the guess), P=4": f"{guess.token_latency_s * 1e3:.1f} ms",
                    "hop source": lat["deepseek-ib-cross-leaf-64B"].get("source", "")[:90]})


@register(25)
def _check_25() -> Verdict:
    b, L = 64, 65536
    kv = [parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, batch=b, context=L, weight_dtype="fp8").kv_bytes
          for P in (1, 2, 4, 8)]
    hand = b * L * 61 * (512 + 64) * 2 / 64  # b L beta / E, with MLA beta = 61 x 576 x 2 bytes
    require(np.allclose(kv, hand), 25, f"KV per GPU {kv} vs hand {hand}")
    kv70 = [parallelism.memory_per_gpu("llama-3.1-70b", tp=8, pp=P, batch=16, context=L).kv_bytes for P in (1, 2, 4)]
    require(np.allclose(kv70, kv70[0]), 25, "dense GQA: KV per GPU depends on P")
    return Verdict(25, "holds",
                   "with P stages, P micro-batches must be in flight; each stage stores 1/P of the layers for P times "
                   "the sequences, so KV bytes per GPU = b L beta / E, independent of P (shown for MLA and GQA)",
                   {"DeepSeek-V3, b=64, L=65536, EP64": f"KV per GPU {hand / 1e9:.1f} GB for P = 1, 2, 4, 8",
                    "Llama-3.1-70B, TP8, b=16, L=65536": f"{kv70[0] / 1e9:.1f} GB for P = 1, 2, 4"})


@register(26)
def _check_26() -> Verdict:
    deps = parallelism.deployments()
    pps = {k: d["pipeline_parallel"] for k, d in deps.items()}
    require(all(p == 1 for p in pps.values()), 26, f"a published layout now pipelines: {pps}")
    # The scale-up domain each layout ran on: NVLink inside an 8-GPU H800/H100 node, a whole NVL72 rack for GB200.
    domain = {k: (72 if "GB200" in d["gpu"] else d["gpus_per_node"]) for k, d in deps.items()}
    beyond = {k: d["expert_parallel"] / domain[k] for k, d in deps.items()}
    ds = models.get("deepseek-v3")
    nvl = hardware.system("gb200-nvl72")
    B, L = 4096, 16384  # sequences on the rack, tokens of context each
    m = parallelism.memory_per_gpu(ds, ep=64, pp=1, batch=B, context=L, weight_dtype="fp8")
    require(m.total_bytes <= nvl.hbm_bytes_per_package, 26,
             "DeepSeek-V3 at fp8 with 4096 x 16k-token sequences no longer fits one NVL72 without pipelining")
    require(all(r <= 1 for k, r in beyond.items() if domain[k] == 72), 26, "an NVL72 layout now exceeds its rack")
    return Verdict(26, "holds if",
                   "little pipelining: every published large-MoE layout uses PP = 1; 'EP up to the scale-up domain' "
                   "is what NVL72 layouts do, but on 8-GPU boxes operators push EP 4-40x past the NVLink domain over "
                   "InfiniBand (DeepSeek EP32-320, SGLang EP72) to give each expert a large enough batch",
                   {"pipeline degrees": ", ".join(f"{k} {p}" for k, p in pps.items()),
                    "EP / scale-up domain": ", ".join(f"{k} {r:.2g}x" for k, r in beyond.items()),
                    "DeepSeek-V3 on one NVL72 (EP64, fp8, 4096 sequences x 16k tokens)":
                    f"{m.weight_bytes / 1e9:.0f} GB weights + {m.kv_bytes / 1e9:.0f} GB KV per GPU "
                    f"of {nvl.hbm_bytes_per_package / 1e9:.0f} GB"})
