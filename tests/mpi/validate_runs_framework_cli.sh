#!/usr/bin/env bash
# `validate runs --framework NAME` and the framework column: the Korthikanti table with only
# issue 14's columns (tools/strip_runs_columns.py) says which framework fills its empty switch
# cells, and under megatron-lm-2021 the --explain command of a row carries that framework's
# switches (host syncs, scatter/gather, non-flash attention) and reproduces the full table's
# prediction of the row; an unknown framework is refused, naming the known ones.
set -u
perfsim="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

python3 "$root/tools/strip_runs_columns.py" "$root/configs/validation/korthikanti2022.csv" \
  stripped.csv || fail "strip_runs_columns.py failed"
head -3 stripped.csv | grep -q 'get_batch_sync' && fail "the stripped table kept a switch column"

"$perfsim" validate runs stripped.csv --quiet >default.txt 2>&1 || fail "$(cat default.txt)"
grep -q '^framework: megatron-core (4 rows)' default.txt || { cat default.txt; fail "no framework line"; }

row=korthikanti-22b-sp-selective
"$perfsim" validate runs stripped.csv --quiet --framework megatron-lm-2021 --explain "$row" \
  >lm.txt 2>&1 || fail "$(cat lm.txt)"
grep -q '^framework: megatron-lm-2021 (4 rows)' lm.txt || { cat lm.txt; fail "no framework line"; }
command="$(grep '^  perfsim simulate ' lm.txt)"
for flag in --get-batch-sync --timer-syncs --p2p-scatter-gather "--attention unfused" --dropout; do
  case "$command" in *"$flag"*) ;; *) fail "the explained command lacks $flag: $command" ;; esac
done

# The full table states exactly these switches for its rows: the same prediction.
"$perfsim" validate runs "$root/configs/validation/korthikanti2022.csv" --quiet --format csv \
  >full.csv 2>&1 || fail "$(cat full.csv)"
"$perfsim" validate runs stripped.csv --quiet --framework megatron-lm-2021 --format csv \
  >preset.csv 2>&1 || fail "$(cat preset.csv)"
predicted() {
  python3 -c 'import csv, sys
print(next(r["predicted_s"] for r in csv.DictReader(open(sys.argv[1])) if r["name"] == sys.argv[2]))' "$1" "$row"
}
full="$(predicted full.csv)"
preset="$(predicted preset.csv)"
echo "$row: full table $full s, stripped + megatron-lm-2021 $preset s"
[ -n "$full" ] && [ "$full" = "$preset" ] || fail "$row: $full s with every column, $preset s from the preset"

"$perfsim" validate runs stripped.csv --quiet --framework nemo2 >bad.txt 2>&1 &&
  fail "an unknown framework was accepted"
grep -q 'megatron-bridge' bad.txt || { cat bad.txt; fail "the refusal does not name the frameworks"; }
echo "PASS"
