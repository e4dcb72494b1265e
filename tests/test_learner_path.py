"""The learner's path: prerequisites, notation and glossary pages, and the chapters' use of them.

A new student should be able to follow chapters 0-2 with every symbol and term defined where it is first
used. These checks hold the pieces together, with no Sphinx build:

* ``book/notation.md`` lists each symbol once, says in which chapter it is first used (and that chapter does
  use it first), and every symbol a chapter writes in LaTeX is on it;
* notation that two chapters once used for two different things (the retired forms below) does not return;
* every glossary link from a chapter or a book page lands on a heading of ``book/glossary.md``;
* every chapter has a "Before you start" cell right after its title cell and a "Read next" cell at its end,
  and neither carries slide metadata (they join the slide before them);
* in chapters 0-2 each key term is linked to the glossary (or defined in bold) where it is first used, and
  across the course TTFT and TPOT are spelled out at first use; chapter 12's tool names link to the glossary.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
NOTATION = BOOK / "notation.md"
GLOSSARY = BOOK / "glossary.md"
PREREQUISITES = BOOK / "prerequisites.md"


# --- reading the chapters ---------------------------------------------------------------------------------------

def cells(path: Path) -> list[dict]:
    """The Jupytext py:percent cells of a chapter: kind, header line, and text (markdown without its '# ')."""
    out = []
    for block in re.split(r"^(?=# %%)", path.read_text(encoding="utf-8"), flags=re.M):
        if not block.startswith("# %%"):
            continue
        header, _, body = block.partition("\n")
        kind = "markdown" if "[markdown]" in header else "code"
        if kind == "markdown":
            body = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in body.rstrip("\n").split("\n"))
        out.append({"kind": kind, "header": header, "text": body.strip("\n")})
    return out


def markdown(path: Path) -> str:
    return "\n\n".join(c["text"] for c in cells(path) if c["kind"] == "markdown")


_MATH = re.compile(r"\$\$(.+?)\$\$|\$((?:[^$\n]|\n(?!\s*\n))+?)\$", re.S)   # inline math may wrap a line
_TEXT_SUB = re.compile(r"_\\(?:text|mathrm|operatorname)\{([^{}]*)\}")
_NAMED = re.compile(r"(?<!_)\\(?:text|mathrm|operatorname)\{[^{}]*\}(?:_(?:\\text\{[^{}]*\}|\{[^{}]*\}|\w))?")
_TEXT = re.compile(r"\\(?:text|mathrm|operatorname|mathit)\{[^{}]*\}")
_TOKEN = re.compile(r"(\\mathcal\{[A-Za-z]\}|\\[A-Za-z]+|[A-Za-z])(\^\*)?(?:_(\{[^{}]*\}|\\[A-Za-z]+|[A-Za-z0-9]))?(\^\*)?('?)")
# LaTeX commands that are operators, spacing or decoration, not symbols of the course
_NOT_SYMBOLS = set("""frac tfrac dfrac cdot times max min approx le ge leq geq ll gg ne neq qquad quad sqrt big Big bigl bigr
    Bigl Bigr left right log ln exp sum prod underbrace overbrace mathbb to infty lceil rceil lfloor rfloor ldots dots
    cdots in propto mid mathbf sim hat tilde bar overline text begin end equiv colon Longrightarrow Longleftrightarrow
    gtrsim lesssim sup nabla leftarrow oplus tanh top lVert rVert lvert rvert pm displaystyle lim limits mathrm
    operatorname mathit boldsymbol""".split())


def math_spans(text: str) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", text)        # code spans are not math, even with a dollar in them
    return [a or b for a, b in _MATH.findall(text)]


def symbols_in(math: str) -> list[str]:
    """The symbols of one LaTeX span, normalised: ``N_\\text{tot}`` -> ``N_tot``, ``B^*_\\text{expert}`` -> ``B^*_expert``."""
    math = _NAMED.sub(" ", math)                         # \text{bw}_\text{up}, \text{MFU}: words, not symbols
    math = _TEXT_SUB.sub(lambda m: "_{" + m.group(1) + "}", math)
    math = _TEXT.sub(" ", math)
    math = re.sub(r"\\mathbb\s*\{?E\}?", " ", math)      # expectation, not the experts
    math = re.sub(r"\\mathrm\{d\}|\\,|\\;|\\!|\\ ", " ", math)
    out = []
    for base, star1, sub, star2, prime in _TOKEN.findall(math):
        if base.startswith("\\") and not base.startswith("\\mathcal") and base[1:] in _NOT_SYMBOLS:
            continue
        sub = sub.strip("{}").replace(" ", "").replace("\\", "")
        out.append(base + ("^*" if star1 or star2 else "") + ("_" + sub if sub else "") + prime)
    return out


def chapter_symbols() -> dict[str, list[int]]:
    """Every symbol written in the chapters' markdown LaTeX -> the chapter numbers using it, in order."""
    found: dict[str, list[int]] = {}
    for path in CHAPTERS:
        n = int(path.name[:2])
        for span in math_spans(markdown(path)):
            for s in symbols_in(span):
                if n not in found.setdefault(s, []):
                    found[s].append(n)
    return found


# --- the notation page ------------------------------------------------------------------------------------------

def notation_rows() -> list[tuple[str, str, int]]:
    """(normalised symbol, meaning, first chapter) for each row of the notation page's tables."""
    rows = []
    for line in NOTATION.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| \$(.+?)\$ \| (.+?) \| (.*?) \| (\d+) \|$", line)
        if m:
            syms = [] if m.group(1).startswith("\\text") else symbols_in(m.group(1))
            rows.append((syms[0] if len(syms) == 1 else m.group(1), m.group(2), int(m.group(4))))
    return rows


def test_symbol_normalisation():
    assert symbols_in(r"N_\text{tot}\,b_w/(nW)") == ["N_tot", "b_w", "n", "W"]
    assert symbols_in(r"B^*_\text{expert} = R \cdot E/k") == ["B^*_expert", "R", "E", "k"]
    assert symbols_in(r"\mathbb{E}[\max_\text{chip} e_\text{chip}]\,P_e") == ["e_chip", "P_e"]
    assert symbols_in(r"x' = \mathrm{clip}(x)") == ["x'", "x"]
    assert symbols_in(r"\text{bw}_\text{up}") == []          # named quantities are words, not symbols
    assert symbols_in(r"\mathcal{L}(x)") == [r"\mathcal{L}", "x"]
    assert math_spans("cost `$x$` and $a$ and $$b$$") == ["a", "b"]


def test_notation_table_lists_each_symbol_once_with_a_chapter():
    rows = notation_rows()
    assert len(rows) > 100, f"only {len(rows)} rows parsed from {NOTATION.name}: has the table format changed?"
    seen: dict[str, str] = {}
    for sym, meaning, chapter in rows:
        assert sym not in seen, f"{sym} is listed twice on the notation page: {seen[sym]!r} and {meaning!r}"
        seen[sym] = meaning
        assert 0 <= chapter <= 12, (sym, chapter)


def test_every_symbol_a_chapter_writes_is_on_the_notation_page():
    listed = {sym for sym, _, _ in notation_rows()}
    missing = {s: chs for s, chs in chapter_symbols().items()
               if s not in listed and not (s.endswith("'") and s[:-1] in listed)}   # phi': a derivative
    assert not missing, ("symbols used in the chapters' LaTeX but not on book/notation.md (add a row, or use the "
                         f"symbol the page already gives that meaning): {missing}")


def test_the_notation_page_says_where_each_symbol_is_first_used():
    used = chapter_symbols()
    wrong = {}
    for sym, _, chapter in notation_rows():
        if sym.startswith("\\text"):
            continue                                  # named quantities (MFU, TP, kv(L)) are not parsed as symbols
        if sym not in used:
            wrong[sym] = "used in no chapter"
        elif used[sym][0] != chapter:
            wrong[sym] = f"first used in chapter {used[sym][0]}, the page says {chapter}"
    assert not wrong, wrong


# Where two chapters once used one symbol for two things, the page picked one meaning and the other got a new
# symbol. These are the old forms; none may come back into a chapter's markdown.
RETIRED = {
    r"with \$F\$ and \$W\$ summed": "W is one chip's bandwidth: write nW for a total (chapter 1)",
    r"\$Y = X ?W\$|\$q = xW\$|W_\\text\{(up|down)\}|\\tanh\(hW\)": "a weight matrix is Theta, not W",
    r"\\frac\{E-1\}\{E\}|With \$E\$ GPUs|the \$E\$ GPUs": "E counts experts; the GPUs of an expert-parallel group are EP",
    r"\\alpha\^\{k\+1\}|E = \(1-\\alpha": "speculative decoding: gamma drafted, tau kept, p_acc each",
    r"n/\\beta|\\frac\{n\}\{\\beta\}": "beta is KV bytes per token; a link's bandwidth is bw, a message M bytes",
    r"\$t = a \+ bL\$|t = s ?\\max\(K": "a is attention FLOPs per cached token and s sparsity: fits use t_0, t_L, t_B",
    r"\(blocks of \$s\$|\\lceil L/s\\rceil": "s is sparsity: a block of tokens is L_blk",
    r"W_\\text\{(GPU|NIC|NVLink)\}": "per-chip bandwidth is W; links are bw_up, bw_out",
    r"\$P\$ stages|\\frac\{p-1\}\{m\+p-1\}": "pipeline stages are PP, not P (P_read counts weights)",
    r"\$C = 6ND\$": "C is one chip's HBM capacity",
    r"\$T\$ prompt tokens|\$T\^\*": "T is chapter 4's cadence; a prompt has L_prompt tokens",
    r"\(L, R\) \\to": "L is context and R the chip ratio; Feistel halves are x_1, x_2",
    r"A/N\^\\alpha|B/D\^\\beta": "Chinchilla's coefficients are A_N, A_D, alpha_N, alpha_D",
    r"\$5as/h\$|\$s\\,b\\,h": "Korthikanti's s, b, h, a are L, b, d, n_h here",
}


@pytest.mark.parametrize("pattern", sorted(RETIRED))
def test_retired_notation_does_not_return(pattern):
    hits = [p.name for p in CHAPTERS if re.search(pattern, markdown(p))]
    assert not hits, f"{RETIRED[pattern]}; found /{pattern}/ in {hits}"


def test_chapter_1_defines_a_where_it_first_appears():
    """The issue's example: chapter 1 used a symbol ``a`` it never defined (attention FLOPs per cached token)."""
    text = markdown(ROOT / "chapters" / "01_batch_size.py")
    para = next(p for p in text.split("\n\n") if re.search(r"\$[^$]*\baL\b", p))
    assert re.search(r"\$a\$ is the\s+attention FLOPs", para), para


# --- the glossary -----------------------------------------------------------------------------------------------

def _slug(title: str) -> str:
    try:
        from myst_parser.slugs import github_slugify
    except ImportError:  # pragma: no cover - an older myst-parser: the same GitHub rule
        def github_slugify(t):
            return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", t.strip().lower()))
    return github_slugify(title)


def glossary_anchors() -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,3} (.+)$", GLOSSARY.read_text(encoding="utf-8"), re.M)}


def links(text: str) -> list[tuple[str, str]]:
    """(link text, target) of every markdown link."""
    return re.findall(r"\[([^\]]+)\]\(([^)\s]+)\)", text)


def test_slugs_follow_myst():
    assert _slug("KV cache") == "kv-cache" and _slug("Dense FLOP/s") == "dense-flops"
    assert _slug("MHA, GQA and MQA") == "mha-gqa-and-mqa"


def test_the_glossary_has_the_terms_a_newcomer_meets():
    anchors = glossary_anchors()
    needed = """roofline arithmetic-intensity balance-point hbm prefill decode kv-cache mha-gqa-and-mqa mla moe
        expert-parallelism tensor-parallelism pipeline-parallelism data-parallelism all-to-all bubble mfu ttft
        tpot-and-itl scale-up scale-out nvlink nvl72 speculative-decoding mtp flashattention vllm sglang
        tensorrt-llm nim mlperf aiconfigurator deepep precision sparsity fast-mode""".split()
    assert not [a for a in needed if a not in anchors], [a for a in needed if a not in anchors]
    entries = re.findall(r"^### ([^\n]+)\n\n(.+?)(?=\n### |\n## |\Z)", GLOSSARY.read_text(encoding="utf-8"), re.M | re.S)
    assert len(entries) >= 80
    for term, body in entries:
        assert len(body.split()) >= 12, f"glossary entry {term!r} is too short to define anything"


@pytest.mark.parametrize("path", [*CHAPTERS, GLOSSARY, NOTATION, PREREQUISITES, BOOK / "index.md"], ids=lambda p: p.name)
def test_links_to_the_learner_pages_resolve(path):
    """Every link from a chapter or a book page to the glossary lands on one of its headings; every relative
    link to a page or a chapter names a file that exists."""
    anchors = glossary_anchors()
    here = path.parent
    bad = []
    text = markdown(path) if path.suffix == ".py" else path.read_text(encoding="utf-8")
    for label, target in links(text):
        if re.match(r"[a-z]+:", target):
            continue                                            # https: and the like
        file, _, anchor = target.partition("#")
        dest = (here / file).resolve() if file else path
        if file and not dest.exists() and not file.startswith("_generated/") and "/_generated/" not in file:
            bad.append(f"[{label}]({target}): no file {dest.relative_to(ROOT)}")
        elif anchor and dest == GLOSSARY and anchor not in anchors:
            bad.append(f"[{label}]({target}): no glossary heading with that anchor")
    assert not bad, bad


# --- each chapter's path in and out -----------------------------------------------------------------------------

@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_before_you_start_and_read_next(path):
    cs = cells(path)
    title = next(i for i, c in enumerate(cs) if c["kind"] == "markdown" and c["text"].startswith("# Chapter "))
    before, last = cs[title + 1], cs[-1]
    n = int(path.name[:2])
    assert before["kind"] == "markdown" and before["text"].startswith("**Before you start.**"), (
        f"{path.name}: the cell after the title must be the 'Before you start' cell")
    assert last["kind"] == "markdown" and last["text"].startswith("**Read next.**"), (
        f"{path.name}: the last cell must be the 'Read next' cell")
    for c in (before, last):       # no slide metadata: they join the slide before them (speaker notes are keyed on slides)
        assert c["header"] == "# %% [markdown]", c["header"]
    assert "../book/notation.md" in before["text"] and "../book/glossary.md#" in before["text"], (
        f"{path.name}: 'Before you start' must point to the notation page and to glossary entries")
    assert re.search(r"\b(about|About) (an hour|\d+ minutes|an hour and a half)", before["text"]), (
        f"{path.name}: 'Before you start' says how long the chapter takes")
    if n > 0:
        earlier = {int(m) for m in re.findall(r"\]\((\d\d)_\w+\.py\)", before["text"])}
        assert earlier and min(earlier) < n, f"{path.name}: 'Before you start' names no earlier chapter to read"
    if n < 12:
        assert f"]({n + 1:02d}_" in last["text"], f"{path.name}: 'Read next' does not link chapter {n + 1}"
    assert "https://" in last["text"] or re.search(r"arXiv:\d{4}\.\d{4,5}|\(\d{4}\)|20\d\d", last["text"]), (
        f"{path.name}: 'Read next' names no outside reading")


def _first_paragraph_with(text: str, pattern: str) -> str | None:
    """The paragraph (or table row) holding the first match of ``pattern`` in prose: not in a heading (a slide's
    heading cannot change), a code span, a link target or a formula."""
    for para in re.split(r"\n\s*\n|\n(?=\|)", text):
        bare = re.sub(r"`[^`\n]*`", "", re.sub(r"\]\([^)]*\)", "]", para))
        bare = _MATH.sub(" ", re.sub(r"^#+ .*$", "", bare, flags=re.M))   # headings name a topic; math is not prose
        if re.search(pattern, bare):
            return para
    return None


def first_use_problems(text: str, terms: dict[str, str]) -> list[str]:
    problems = []
    for pattern, anchor in terms.items():
        para = _first_paragraph_with(text, pattern)
        if para is None:
            problems.append(f"/{pattern}/ is not used at all")
            continue
        linked = re.search(rf"glossary\.md#{re.escape(anchor)}\)", para)
        bold = re.search(r"\*\*[^*]*?(" + pattern + r")[^*]*?\*\*", para)
        if not (linked or bold):
            problems.append(f"/{pattern}/ first appears unlinked and undefined: {para[:160]!r}")
    return problems


def test_first_use_checker_catches_an_unlinked_term():
    terms = {r"KV cache": "kv-cache"}
    ok = "Intro.\n\nThe [KV cache](../book/glossary.md#kv-cache) grows.\n\nThe KV cache again."
    assert first_use_problems(ok, terms) == []
    assert first_use_problems("The **KV cache** holds keys.", terms) == []
    slipped = "A KV cache appears early.\n\nThe [KV cache](../book/glossary.md#kv-cache) grows."
    assert first_use_problems(slipped, terms)
    assert first_use_problems("See [here](../book/glossary.md#kv-cache-x) for the KV cache.", terms)


KEY_TERMS = {
    "00_rooflines": {r"\bkernel\b": "kernel", r"\broofline\b": "roofline", r"\bHBM\b": "hbm",
                     r"arithmetic intensity": "arithmetic-intensity", r"balance point": "balance-point",
                     r"compute-bound": "compute-bound-and-memory-bound", r"\bbf16\b": "precision",
                     r"\bBLAS\b": "blas-gemm-and-gemv", r"scale-up": "scale-up", r"\bFLOP/s\b": "flop"},
    "01_batch_size": {r"\bdecode\b": "decode", r"\bclaims?\b": "claim", r"KV cache": "kv-cache",
                      r"mixtures? of experts|\bMoE\b": "moe", r"\bsparsity\b": "sparsity",
                      r"expert parallelism": "expert-parallelism", r"Fast Mode": "fast-mode",
                      r"speculative decoding": "speculative-decoding", r"\bMTP\b|multi-token": "mtp",
                      r"all-to-all": "all-to-all", r"balance batch": "balance-batch",
                      r"chip-seconds?": "chip-second", r"\bfp8\b": "precision", r"LM head": "embedding-and-lm-head",
                      r"time to first token|\bTTFT\b": "ttft", r"pooled bandwidth": "pooled-bandwidth"},
    "02_kv_cache": {r"KV cache": "kv-cache", r"\bMHA\b": "mha-gqa-and-mqa", r"\bGQA\b": "mha-gqa-and-mqa",
                    r"\bMQA\b": "mha-gqa-and-mqa", r"\bMLA\b": "mla", r"\bMFU\b": "mfu",
                    r"sparse.attention": "sparse-attention", r"\brope\b": "rope",
                    r"data-parallel|\bDP\d": "data-parallelism", r"\bTP\d|tensor parallelism": "tensor-parallelism",
                    r"\bvLLM\b": "vllm", r"Little's law": "littles-law", r"\bSM\b": "sm-warp-tensor-core",
                    r"FlashAttention|online softmax": "flashattention"},
}


@pytest.mark.parametrize("chapter", sorted(KEY_TERMS))
def test_chapters_0_to_2_link_or_define_each_key_term_at_first_use(chapter):
    problems = first_use_problems(markdown(ROOT / "chapters" / f"{chapter}.py"), KEY_TERMS[chapter])
    assert not problems, f"{chapter}: " + "; ".join(problems)


def test_ttft_and_tpot_are_spelled_out_where_first_used():
    text = "\n\n".join(markdown(p) for p in CHAPTERS)
    for short, spelled, anchor in (("TTFT", "time to first token", "ttft"), ("TPOT", "time per output token", "tpot-and-itl")):
        para = _first_paragraph_with(text, rf"\b{short}\b|{spelled}")
        assert para and spelled in para.lower().replace("\n", " ") and f"glossary.md#{anchor})" in para, (short, para)


def test_chapter_12_links_its_tools_and_products_to_the_glossary():
    names = {r"\bvLLM\b": "vllm", r"\bSGLang\b": "sglang", r"TensorRT-LLM": "tensorrt-llm", r"\bNIM\b": "nim",
             r"\bMLPerf\b": "mlperf", r"AIConfigurator": "aiconfigurator", r"\bDeepEP\b": "deepep",
             r"\bCUTLASS\b": "cutlass", r"InferenceMAX": "inferencemax", r"\bNVFP4\b": "precision",
             r"\bCuPy\b": "cupy-and-numpy", r"\bNVLink\b": "nvlink", r"\bMTP\b": "mtp", r"\bTTFT\b": "ttft",
             r"\bTPOT\b": "tpot-and-itl", r"\bEAGLE\b": "speculative-decoding", r"chunked prefill": "prefill",
             r"two-batch overlap": "two-batch-overlap", r"\bPCIe\b": "infiniband", r"\bNIC\b": "scale-out",
             r"Little's law": "littles-law"}
    text = "\n\n".join(c["text"] for c in cells(ROOT / "chapters" / "12_serving_for_real.py")
                       if c["kind"] == "markdown" and not c["text"].startswith("**Before you start.**"))
    problems = first_use_problems(text, names)
    assert not problems, problems


def test_the_book_index_starts_with_the_learner_pages():
    index = (BOOK / "index.md").read_text(encoding="utf-8")
    start = index.index(":caption: Start here")
    assert start < index.index(":caption: Chapters")
    block = index[start:index.index("```", start)]
    assert [ln for ln in block.splitlines()[1:] if ln and not ln.startswith(":")] == ["prerequisites", "notation", "glossary"]
    for page in (PREREQUISITES, NOTATION, GLOSSARY):
        assert page.read_text(encoding="utf-8").startswith("# "), page


def test_prerequisites_say_what_to_know_where_to_learn_it_and_what_is_not_assumed():
    text = PREREQUISITES.read_text(encoding="utf-8")
    for heading in ("## What to know", "## Where to learn it", "## What the course does not assume"):
        assert heading in text, heading
    where = text[text.index("## Where to learn it"):text.index("## What the course does not assume")]
    assert len(re.findall(r"\]\(https://", where)) >= 6, "name the free resources with their URLs"
    for topic in ("matrix", "attention", "orders of magnitude", "NumPy"):
        assert topic.lower() in text.lower(), topic
