#!/usr/bin/env bash
# Build the book and the PDF N times in a row in a fresh clone, as the README says, and say how each went.
#
#   tools/book_check.sh N [--busy] [--out FILE]
#
# N        how many builds (default 3)
# --busy   keep one core busy with a plain shell busy loop for the whole check
# --out    also append the report to FILE (e.g. benchmarks/results/book-builds.txt)
#
# The clone is made from this repository's HEAD (commit first). Each build runs the
# README's book command (as the README writes it: a venv, the book extra,
# tools/build_book.py), then tools/build_pdf.py; the first build installs, later
# ones find it installed. A line per build: each command's exit status and time,
# how many measured checks only warned (build_book lists them at the end), and the
# PDF's pages. The OpenBLAS variables come from the shell that runs this, never
# set here (export OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 to try those).
set -uo pipefail

check_name=book_check n_default=3 usage_lines="2,16p"
source "$(dirname "$0")/check_args.sh"
n_builds="$n"

repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "$out" ]; then   # the report is appended after cd-ing into the clone: make the path absolute first
    mkdir -p "$(dirname "$out")" && out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"; [ -n "${busy_pid:-}" ] && kill "$busy_pid" 2>/dev/null' EXIT
git clone -q "$repo" "$work/llmmath"
cd "$work/llmmath" || exit 2
book_cmd="$(grep -m1 -x 'python3 -m venv .venv && .venv/bin/pip install -e "\.\[book\]" && .venv/bin/python tools/build_book.py' README.md)"
[ -n "$book_cmd" ] || { echo "book_check: the README's book command was not found" >&2; exit 2; }
commit="$(git rev-parse --short HEAD)"
if [ "$busy" = 1 ]; then
    (while :; do :; done) &
    busy_pid=$!
fi
report="$work/report.txt"
{
    echo "## $( [ "$busy" = 1 ] && echo "one core busy" || echo idle ), commit $commit, $(date -u +%H:%M) UTC," \
         "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-(unset)}," \
         "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
    echo "# command: $book_cmd; then .venv/bin/python tools/build_pdf.py"
} > "$report"
failed=0
for i in $(seq 1 "$n_builds"); do
    t0=$(date +%s)
    bash -c "$book_cmd" > "$work/book-$i.log" 2>&1
    book_rc=$?
    t1=$(date +%s)
    .venv/bin/python tools/build_pdf.py > "$work/pdf-$i.log" 2>&1
    pdf_rc=$?
    t2=$(date +%s)
    warned=$(sed -n 's/^\([0-9]*\) measured check(s) did not hold.*/\1/p' "$work/book-$i.log" | tail -1)
    pages=$(sed -n 's/.*: \([0-9]*\) pages from .*/\1 pages/p' "$work/pdf-$i.log" | tail -1)
    echo "build $i: book exit $book_rc in $((t1 - t0)) s (${warned:-0} measured-check warnings);" \
         "pdf exit $pdf_rc in $((t2 - t1)) s, ${pages:-no page count}" | tee -a "$report"
    if [ "$book_rc" != 0 ] || [ "$pdf_rc" != 0 ]; then
        failed=$((failed + 1))
        tail -20 "$work/book-$i.log" "$work/pdf-$i.log"
    fi
done
echo "$((n_builds - failed)) of $n_builds built" | tee -a "$report"
[ -n "$out" ] && { echo; cat "$report"; } >> "$out"
[ "$failed" = 0 ]
