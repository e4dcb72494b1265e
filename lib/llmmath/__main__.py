"""Command line: ``python -m llmmath plan ...`` prints a roofline serving plan (:mod:`llmmath.planner`);
``python -m llmmath predict ...`` the expected measured rate, term by term (:func:`llmmath.planner.predict`);
``python -m llmmath simulate ...`` an engine under load (:func:`llmmath.engine.simulate`);
``python -m llmmath size ...`` the cheapest chips and placement for N users at a time per token
(:func:`llmmath.sizing.size`).

Examples::

    python -m llmmath plan --config path/to/config.json --chip h200 --chips 8 --context 32768 --tp 8
    python -m llmmath plan --model deepseek-v3 --chip gb200-nvl72 --weight-dtype fp8 --ep 72 --dp 72 --json
    python -m llmmath predict --model llama-3.1-70b --chip h100-sxm --chips 8 --tp 8 --input-tokens 2000 \
        --output-tokens 200 --max-tpot-ms 50
    python -m llmmath size --model llama-3.1-70b --users 500 --tpot-ms 30 --input-tokens 2000 --output-tokens 500

Nothing is downloaded: ``--config`` reads a local Hugging Face ``config.json``. A bad flag is
refused by argparse (exit status 2) with a message naming the flag and what it allows.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings

from . import hardware, models, planner
from .units import DTYPE_BYTES, dtype_bytes


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return v


def _dtype(text: str):
    try:
        value = float(text)
    except ValueError:
        value = text
    try:
        dtype_bytes(value)
    except (KeyError, ValueError, TypeError):
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(DTYPE_BYTES)} or bytes per element in "
                                         f"(0, 8] such as 0.5625, got {text!r}") from None
    return value


def _model_args(p: argparse.ArgumentParser) -> None:
    """The model: a catalog name or a local config.json."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", metavar="PATH", help="a local Hugging Face config.json (or its folder)")
    src.add_argument("--model", metavar="NAME", help=f"a catalog model: {', '.join(models.names())}")
    p.add_argument("--name", help="a name for a --config model (default: the config's _name_or_path, else its "
                                  "file's name, or its folder's for a config.json)")


def _prices(text: str) -> dict | float:
    """``--usd-per-chip-hour``: one number for every chip tried, or ``chip=USD,chip=USD``."""
    if "=" not in text:
        return _positive_float(text)
    out = {}
    for part in text.split(","):
        chip, _, usd = part.partition("=")
        if chip.strip() not in hardware.names():
            raise argparse.ArgumentTypeError(f"{chip.strip()!r} is not a chip; chips: {', '.join(hardware.names())}")
        out[chip.strip()] = _positive_float(usd)
    return out


def _model_and_deployment_args(p: argparse.ArgumentParser) -> None:
    """The flags ``plan`` and ``predict`` share: the model, the chips, the placement and the precisions."""
    _model_args(p)
    p.add_argument("--chip", required=True, metavar="NAME",
                   help=f"a chip ({', '.join(hardware.names())}) or a system ({', '.join(hardware.systems())})")
    p.add_argument("--chips", type=_positive_int, default=None, help="chips in the deployment (default 1, or the system's)")
    p.add_argument("--batch", type=_positive_float, default=None,
                   help="sequences decoding at once (default: the largest that fits)")
    p.add_argument("--weight-dtype", type=_dtype, default="bf16", help="weights: a name or bytes per element (0.5625)")
    p.add_argument("--kv-dtype", type=_dtype, default="bf16", help="KV cache: a name or bytes per element")
    p.add_argument("--compute-dtype", choices=list(DTYPE_BYTES), default=None,
                   help="matmul precision (default: the weights' if the chip has it, else bf16)")
    for flag, what in (("--tp", "tensor parallel"), ("--ep", "expert parallel"), ("--dp", "attention data parallel"),
                       ("--pp", "pipeline stages")):
        p.add_argument(flag, type=_positive_int, default=1, help=f"{what} degree (default 1)")
    mem = p.add_mutually_exclusive_group()
    mem.add_argument("--gpu-memory-utilization", type=_positive_float, default=None, metavar="F",
                     help="share of each GPU's runtime memory the engine takes, in (0, 1]; its reserve (activation "
                          "peak, memory outside torch) comes out of it (default 0.9, vLLM's; every subcommand)")
    mem.add_argument("--usable-hbm-fraction", type=_positive_float, default=None, metavar="F",
                     help="instead: a share of each chip's datasheet HBM for weights + KV cache, nothing held back "
                          "(1.0: the roofline's most optimistic capacity)")
    p.add_argument("--engine", choices=["vllm", "sglang"], default="vllm",
                   help="whose memory rule sizes the KV cache (default vllm); for sglang give its mem_fraction_static "
                        "as --gpu-memory-utilization")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m llmmath", description="The course's calculators, offline.")
    sub = ap.add_subparsers(dest="command", required=True, metavar="{plan,predict,simulate,size}")
    p = sub.add_parser("plan", help="a roofline serving plan: fits?, max batch, step time, tokens/s, cost",
                       description="A roofline serving plan. Every time is a floor, every rate a ceiling.")
    _model_and_deployment_args(p)
    p.add_argument("--context", type=_positive_int, default=8192, help="tokens of context per sequence (default 8192)")
    p.add_argument("--prompt-tokens", type=_positive_int, default=None, help="prompt length for the time to first token")
    p.add_argument("--usd-per-chip-hour", type=_positive_float, default=None,
                   help="your price per chip-hour, dollars (default: none; dollars are then left out, null in JSON)")
    q = sub.add_parser("predict", help="the expected measured tokens/s: the ceiling, then each term an engine pays",
                       description="What a deployment will actually do: the roofline ceiling and, term by term, "
                                   "what a real engine pays (planner.predict).")
    _model_and_deployment_args(q)
    q.add_argument("--input-tokens", type=_positive_int, required=True, help="mean prompt length")
    q.add_argument("--output-tokens", type=_positive_int, required=True, help="mean output length")
    q.add_argument("--phase", choices=["decode", "prefill", "aggregated"], default="decode",
                   help="decode (output tokens/s per chip), prefill (input tokens/s per chip) or aggregated "
                        "(output tokens/s per chip when the same chips prefill too); default decode")
    q.add_argument("--max-tpot-ms", type=_positive_float, default=None,
                   help="the largest batch whose time per output token stays under this (milliseconds)")
    q.add_argument("--mtp-tokens", type=_positive_int, default=None, help="tokens drafted per step (MTP)")
    q.add_argument("--mtp-acceptance", type=_positive_float, default=None,
                   help="probability a drafted token is kept, given the one before it was (default 0.85)")
    q.add_argument("--overlap", choices=["none", "two-batch"], default="none",
                   help="two-batch: the engine overlaps one micro-batch's all-to-all with the other's compute "
                        "(DeepSeek, SGLang); default none")
    q.add_argument("--usd-per-chip-hour", type=_positive_float, default=None,
                   help="a rental price you supply: prints dollars per 1M tokens at the expected rate and its band")
    q.add_argument("--offline-requests", type=_positive_int, default=None, metavar="N",
                   help="with --phase aggregated: the rate of an offline benchmark queueing N requests at once "
                        "(trtllm-bench throughput), its ramp-up and drain simulated")
    r = sub.add_parser("simulate", help="a continuous-batching engine under Poisson arrivals: TTFT, TPOT, throughput",
                       description="The deployment's replicas simulated step by step on the predicted step model "
                                   "(engine.simulate).")
    _model_and_deployment_args(r)
    r.add_argument("--requests-per-s", type=_positive_float, required=True, help="arrival rate (whole deployment)")
    r.add_argument("--requests", type=_positive_int, default=10_000, help="requests simulated (default 10,000)")
    r.add_argument("--input-tokens", type=_positive_int, required=True, help="prompt length")
    r.add_argument("--output-tokens", type=_positive_int, required=True, help="output length")
    r.add_argument("--token-budget", type=_positive_int, default=None,
                   help="tokens a step may hold (default vLLM's: 8192 on a GPU of 70 GiB or more, else 2048)")
    r.add_argument("--seed", type=int, default=0, help="arrivals' random seed (default 0)")
    r.add_argument("--kv-policy", choices=["paged", "reserve"], default="paged",
                   help="paged: admit when the prompt fits, preempt when full (vLLM, SGLang); reserve: admit only when "
                        "the whole request fits (default paged)")
    r.add_argument("--page-tokens", type=_positive_int, default=16, help="tokens per KV page (default 16)")
    r.add_argument("--preemption", choices=["recompute", "swap"], default="recompute",
                   help="what a preempted sequence's KV costs: prefilled again, or copied to host and back")
    r.add_argument("--max-running", type=_positive_int, default=None, help="most sequences a replica runs at once")
    r.add_argument("--prefill-chips", type=_positive_int, default=None,
                   help="a separate prefill pool of this many chips (prefill/decode disaggregation); the placement "
                        "flags then describe the decode pool")
    for flag in ("tp", "ep", "dp"):
        r.add_argument(f"--prefill-{flag}", type=_positive_int, default=1, help=f"the prefill pool's {flag} (default 1)")
    z = sub.add_parser("size", help="the cheapest chips, count and placement for N users at a time per token",
                       description="Which chips, how many and placed how, to serve the model to --users concurrent "
                                   "users within --tpot-ms (and --ttft-ms): every placement priced with the one "
                                   "step model, the cheapest run in the engine simulator (sizing.size).")
    _model_args(z)
    z.add_argument("--users", type=_positive_int, required=True, help="concurrent users, each streaming one request")
    z.add_argument("--tpot-ms", type=_positive_float, required=True, help="the most time per output token, ms")
    z.add_argument("--ttft-ms", type=_positive_float, default=None, help="the most time to first token, ms (optional)")
    z.add_argument("--input-tokens", type=_positive_int, required=True, help="prompt length, tokens")
    z.add_argument("--output-tokens", type=_positive_int, required=True, help="output length, tokens")
    z.add_argument("--chip", default=None, metavar="NAME[,NAME...]",
                   help="chips to try (default: every chip with a known price, data/chip_prices.toml)")
    z.add_argument("--weight-dtype", type=_dtype, default="bf16", help="weights: a name or bytes per element")
    z.add_argument("--kv-dtype", type=_dtype, default="bf16", help="KV cache: a name or bytes per element")
    z.add_argument("--usd-per-chip-hour", type=_prices, default=None, metavar="USD|CHIP=USD,...",
                   help="rental prices: one for every chip tried, or per chip (default: public on-demand list prices)")
    z.add_argument("--no-engine", action="store_true", help="skip the engine simulation of the cheapest")
    z.add_argument("--json", action="store_true", help="print the result as JSON")
    return ap


# which flag a library error is about, from the argument name its message starts with or mentions
_FLAGS = [("prefill pool", "--prefill-chips"), ("no batch of", "--chips"), ("chip or system", "--chip"), ("names no chip", "--chip"),
          ("usable_hbm_fraction", "--usable-hbm-fraction"), ("gpu_memory_utilization", "--gpu-memory-utilization"),
          ("runtime memory", "--chip"), ("n_chips", "--chips"), ("tp=", "--tp"),
          ("ep=", "--ep"), ("dp=", "--dp"), ("pp=", "--pp"), ("context", "--context"), ("batch", "--batch"),
          ("prompt_tokens", "--prompt-tokens"), ("usd_per_chip_hour", "--usd-per-chip-hour"), ("dtype", "--weight-dtype"),
          ("max_tpot_s", "--max-tpot-ms"), ("input_tokens", "--input-tokens"), ("output_tokens", "--output-tokens"),
          ("acceptance", "--mtp-acceptance"), ("requests_per_s", "--requests-per-s"),
          ("tokens of KV", "--input-tokens"), ("token_budget", "--token-budget"), ("one-stage replicas", "--pp"),
          ("offline_requests", "--offline-requests"), ("users", "--users"), ("max_ttft_s", "--ttft-ms"),
          ("chips is empty", "--chip"), ("no chip has a known price", "--usd-per-chip-hour"),
          ("usd_per_chip_hour prices", "--usd-per-chip-hour"), ("unknown chip", "--chip")]


def _flag_for(msg: str) -> str:
    fix = re.search(r"try (tp|ep|dp|pp)=", msg)       # a message that names its own fix: "... try tp=8"
    if fix:
        return f"--{fix.group(1)}"
    hits = [(msg.find(k), flag) for k, flag in _FLAGS if k in msg]
    return min(hits)[1] if hits else "--model"


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    sub = ap._subparsers._group_actions[0].choices[args.command]  # the subcommand's parser, for its error()
    if args.config:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = models.from_hf_config(args.config, name=args.name)
            for w in caught:
                print(f"warning: {w.message}", file=sys.stderr)
        except (OSError, ValueError, TypeError) as e:
            sub.error(f"argument --config: {e}")
    else:
        try:
            model = models.get(args.model)
        except KeyError as e:
            sub.error(f"argument --model: {e.args[0]}")
    if args.command == "size":
        return _size(args, model, sub)
    if args.command == "predict":
        return _predict(args, model, sub)
    if args.command == "simulate":
        return _simulate(args, model, sub)
    p = _refusing(sub, lambda: planner.plan(
        model, args.chip, args.chips, context=args.context, batch=args.batch, prompt_tokens=args.prompt_tokens,
        usd_per_chip_hour=args.usd_per_chip_hour, **_deployment_kwargs(args)))
    print(json.dumps(p.to_dict(), indent=2, allow_nan=False) if args.json else _as_flags(p.table()))
    return 0


def _deployment_kwargs(args) -> dict:
    """The placement, precisions and memory view every subcommand passes on (one default: the engine's)."""
    kw = dict(tp=args.tp, ep=args.ep, dp=args.dp, pp=args.pp, weight_dtype=args.weight_dtype,
              kv_dtype=args.kv_dtype, compute_dtype=args.compute_dtype, usable_hbm_fraction=args.usable_hbm_fraction,
              gpu_memory_utilization=args.gpu_memory_utilization, engine=args.engine)
    return kw


def _as_flags(text: str) -> str:
    """The library names a fix by its keyword (``try tp=8``, ``weight_dtype fp8``); on the command line it is a flag."""
    text = re.sub(r"\btry (tp|ep|dp|pp)=(\d+)", r"try --\1 \2", text)
    return re.sub(r"\bweight_dtype (\w+)", r"--weight-dtype \1", text)


def _refusing(sub, call):
    """``call()``, or the subcommand's usage error (exit status 2) naming the flag a library error is about."""
    try:
        return call()
    except (ValueError, KeyError, TypeError) as e:
        msg = e.args[0] if e.args else str(e)
        flag = _flag_for(msg)
        # the library names a placement's fix as its keyword (tp=8); on the command line it is a flag (--tp 8)
        sub.error(f"argument {flag}: {_as_flags(msg)}")


def _predict(args, model, sub) -> int:
    p = _refusing(sub, lambda: planner.predict(
        model, args.chip, args.chips, input_tokens=args.input_tokens, output_tokens=args.output_tokens,
        batch=args.batch, phase=args.phase, max_tpot_s=None if args.max_tpot_ms is None else args.max_tpot_ms / 1e3,
        mtp_tokens=args.mtp_tokens or 0, mtp_acceptance=args.mtp_acceptance, overlap=args.overlap,
        offline_requests=args.offline_requests, **_deployment_kwargs(args)))
    from .deployment import chip_and_count
    chip, _ = chip_and_count(args.chip, args.chips)
    lo, hi, reasons = planner.band(p.tokens_per_s_per_chip, model, chip, phase=args.phase, batch=p.batch,
                                   compute_dtype=args.compute_dtype or _default_compute(chip, args.weight_dtype))
    from .deployment import Deployment
    most = Deployment(model, args.chip, args.chips, **_deployment_kwargs(args)).max_batch(
        args.input_tokens + args.output_tokens / 2.0)
    fits = p.batch <= most
    price = args.usd_per_chip_hour
    usd = None if price is None or not fits else [price / 3600.0 / r * 1e6 for r in (p.tokens_per_s_per_chip, hi, lo)]
    what = "input" if args.phase == "prefill" else "output"
    if args.json:
        print(json.dumps({**p.to_dict(), "fits": bool(fits), "max_batch": most,
                          "band_tokens_per_s_per_chip": [lo, hi], "band_reasons": reasons,
                          f"usd_per_million_{what}_tokens": None if usd is None else usd[0],
                          "band_usd_per_million_tokens": None if usd is None else usd[1:]},
                         indent=2, allow_nan=False))
    else:
        print(p.table())
        print(f"expected measured: {lo:,.0f}-{hi:,.0f} tokens/s per chip, from " + "; ".join(reasons))
        if not fits:
            print(f"does NOT fit: {p.batch:,.0f} sequences' KV cache at the mean context exceeds the {most:,.0f} that "
                  f"fit (lower --batch, or more chips)")
        print(f"$ per 1M {what} tokens: " + (f"not priced: --batch {p.batch:,.0f} does not fit" if not fits else
                                            "(no price given: --usd-per-chip-hour)" if usd is None else
                                            f"${usd[0]:.3g} (${usd[1]:.3g}-${usd[2]:.3g} over the band) at "
                                            f"${price:g} a chip-hour"))
    return 0


def _default_compute(chip, weight_dtype) -> str:
    from .hardware import default_compute_dtype
    return default_compute_dtype(chip, weight_dtype)


def _size(args, model, sub) -> int:
    from . import sizing
    chips = None if args.chip is None else [c.strip() for c in args.chip.split(",") if c.strip()]
    prices = args.usd_per_chip_hour
    if isinstance(prices, float):
        if chips is None:
            sub.error("argument --usd-per-chip-hour: one price for every chip needs --chip to name them; "
                      "or give CHIP=USD,CHIP=USD")
        prices = {c: prices for c in chips}
    s = _refusing(sub, lambda: sizing.size(
        model, args.users, max_tpot_s=args.tpot_ms / 1e3, max_ttft_s=None if args.ttft_ms is None else args.ttft_ms / 1e3,
        input_tokens=args.input_tokens, output_tokens=args.output_tokens, chips=chips, weight_dtype=args.weight_dtype,
        kv_dtype=args.kv_dtype, usd_per_chip_hour=prices, engine_check=not args.no_engine))
    print(json.dumps(s.to_dict(), indent=2, allow_nan=False) if args.json else s.table())
    return 0 if s.best is not None else 1


def _simulate(args, model, sub) -> int:
    from . import engine
    r = _refusing(sub, lambda: engine.simulate(
        model, args.chip, args.chips, requests_per_s=args.requests_per_s, n_requests=args.requests,
        input_tokens=args.input_tokens, output_tokens=args.output_tokens, token_budget=args.token_budget,
        seed=args.seed, kv_policy=args.kv_policy, page_tokens=args.page_tokens, preemption=args.preemption,
        max_running=args.max_running, prefill=None if args.prefill_chips is None else dict(
            n_chips=args.prefill_chips, tp=args.prefill_tp, ep=args.prefill_ep, dp=args.prefill_dp),
        **_deployment_kwargs(args)))
    out = {"requests": int(r.arrival_times_s.size), "steps": r.steps, "preemptions": r.preemptions,
           "throughput_output_tokens_per_s": r.throughput_output_tokens_per_s,
           "mean_requests_in_system": r.mean_requests_in_system, "peak_kv_tokens": r.peak_kv_tokens,
           "kv_capacity_tokens": r.kv_capacity_tokens,
           "peak_kv_bytes_per_chip": r.peak_kv_bytes, "kv_capacity_bytes_per_chip": r.kv_capacity_bytes,
           **{f"{w}_p{q}": r.percentile(w, q) for w in ("ttft_s", "tpot_s", "e2e_s") for q in (50, 90, 99)}}
    if args.json:
        print(json.dumps(out, indent=2, allow_nan=False))
    else:
        for k, v in out.items():
            print(f"{k:<32} {_with_unit(k, v)}")
        demand = args.requests_per_s * args.output_tokens
        if r.throughput_output_tokens_per_s < 0.9 * demand:
            print(f"OVERLOADED: requests ask for {demand:,.0f} output tokens/s and the deployment made "
                  f"{r.throughput_output_tokens_per_s:,.0f}; the queue grows for as long as they arrive (lower "
                  f"--requests-per-s, or more chips)")
    return 0


def _with_unit(key: str, v) -> str:
    """A simulate result with its unit: seconds as ms or s, bytes as GB, tokens/s and counts with separators."""
    from .units import fmt_bytes, fmt_seconds
    if key.endswith("tokens_per_s"):
        return f"{v:,.0f} tokens/s"
    if key.endswith("_s") or "_s_p" in key:
        return fmt_seconds(v)
    if "bytes" in key:
        return fmt_bytes(v)
    if key.endswith("_tokens"):
        return f"{v:,.0f} tokens"
    return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}"


if __name__ == "__main__":
    sys.exit(main())
