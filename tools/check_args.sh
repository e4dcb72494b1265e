# Sourced by tools/flake_check.sh and tools/book_check.sh: their shared arguments, N [--busy] [--out FILE].
# Before sourcing, set check_name, n_default and usage_lines (the script's lines that --help prints);
# after it, n (a whole number >= 1), busy (0 or 1) and out (a file name, or empty) are set.
n="$n_default"
busy=0
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --busy) busy=1 ;;
        --out) out="$2"; shift ;;
        -h|--help) sed -n "$usage_lines" "$0"; exit 0 ;;
        *) if [[ "$1" =~ ^[1-9][0-9]*$ ]]; then n="$1"; else
               echo "$check_name: N must be a whole number >= 1, got '$1' (usage: tools/$check_name.sh N [--busy] [--out FILE])" >&2
               exit 2
           fi ;;
    esac
    shift
done
