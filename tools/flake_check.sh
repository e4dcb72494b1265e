#!/usr/bin/env bash
# Run the README's test command N times in a fresh clone and say which runs passed.
#
#   tools/flake_check.sh N [--busy] [--out FILE]
#
# N        how many runs (default 5)
# --busy   keep one core busy with a plain shell busy loop for the whole check, as a
#          reader's laptop running something else would (the suite must still pass)
# --out    also write the report to FILE (e.g. benchmarks/results/flake-check-cpu-2core.txt)
#
# The clone is made from this repository's HEAD (commit your work first), in a
# temporary folder that is removed at the end. The test command is read from the
# README (tools/readme_command.py test), exactly as .ci/run does; the first run
# creates .venv and installs, later runs find it installed (the command is the
# same, pip just has nothing to do). Each run's pytest also reports its 10
# slowest tests (PYTEST_ADDOPTS=--durations=10); the report ends with the slowest
# tests over all runs, the spread of every measured fact the chapters checked
# (each run sets LLMMATH_MEASURED_LOG; tools/measured_spread.py reads the logs:
# smallest, median and largest value, its bound, the worst margin), and one line
# "N passed, N failed". The OpenBLAS variables are taken from the shell that runs
# this script, never set here: export OPENBLAS_CORETYPE=Haswell
# OPENBLAS_L2_SIZE=512 before it to test the kernel set some hosts choose.
set -uo pipefail

check_name=flake_check n_default=5 usage_lines="2,16p"
source "$(dirname "$0")/check_args.sh"
n_runs="$n"

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/llmmath-flake.XXXXXX")"
busy_pid=""
cleanup() {
    [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$repo" "$work/clone" || { echo "flake_check: git clone of $repo failed" >&2; exit 2; }
cmd="$(cd "$work/clone" && python3 tools/readme_command.py test)" || { echo "flake_check: no test command in README" >&2; exit 2; }
if [ "$busy" = 1 ]; then
    ( while :; do :; done ) &
    busy_pid=$!
fi

report="$work/report.txt"
{
    echo "# flake check: the README's test command, $n_runs runs in a fresh clone"
    echo "# commit $(git -C "$repo" rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(python3 --version)"
    echo "# load: $([ "$busy" = 1 ] && echo 'one core kept busy by a shell busy loop (while :; do :; done)' || echo 'none added')"
    echo "# OpenBLAS variables in this shell: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-(unset)} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-(unset)}"
    echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
    echo "# command: $cmd"
} > "$report"
cat "$report"

passed=0
failed=0
for i in $(seq 1 "$n_runs"); do
    log="$work/run$i.log"
    start=$(date +%s)
    (cd "$work/clone" && PYTEST_ADDOPTS="--durations=10" LLMMATH_MEASURED_LOG="$work/measured$i.jsonl" \
        bash -euo pipefail -c "$cmd") > "$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    summary="$(grep -E '^=*.*(passed|failed|error).* in [0-9.]+s' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')"
    if [ "$rc" = 0 ]; then passed=$((passed + 1)); verdict=PASS; else failed=$((failed + 1)); verdict=FAIL; fi
    line="run $i: $verdict (exit $rc) in ${secs}s: ${summary:-no pytest summary line}"
    echo "$line" | tee -a "$report"
    if [ "$rc" != 0 ]; then
        grep -E '^(FAILED|ERROR) ' "$log" | head -20 | sed 's/^/    /' | tee -a "$report"
        cp "$log" "${TMPDIR:-/tmp}/llmmath-flake-run$i.log" && echo "    full log: ${TMPDIR:-/tmp}/llmmath-flake-run$i.log" | tee -a "$report"
    fi
done

{
    echo
    echo "slowest tests over all runs (the longest time each was seen to take):"
    cat "$work"/run*.log | grep -E '^[0-9.]+s (call|setup|teardown) ' \
        | awk '{t=$1; sub(/s$/, "", t); k=$2; for (i = 3; i <= NF; i++) k = k " " $i;
                if (!(k in m) || t+0 > m[k]) m[k]=t+0} END {for (k in m) printf "%8.2fs %s\n", m[k], k}' \
        | sort -rn | head -15
    echo
    echo "measured facts over all runs (tools/measured_spread.py; worst margin: how far inside its bound the"
    echo "value stayed at its worst, below 1x = failed there; re-measured: first measurements that failed):"
    "$work/clone/.venv/bin/python" "$work/clone/tools/measured_spread.py" "$work"/measured*.jsonl 2>&1
    echo
    echo "flake check: $passed passed, $failed failed"
} | tee -a "$report"

if [ -n "$out" ]; then
    mkdir -p "$(dirname "$out")" && cp "$report" "$out"
fi
[ "$failed" = 0 ]
