#!/usr/bin/env bash
# `validate runs --explain NAME`: the simulate command it prints for a row, run as printed,
# gives the row's predicted iteration time (to the 4 decimals of seconds validate runs prints,
# and within 1e-6 relative in JSON, run on two of the rows to bound the test's time), and the
# row's "where the time goes" summary follows.
# Rows of three kinds: vTrain A100 fp16 with get_batch_sync (shape cells, no model file),
# Megatron-Bridge H100 fp8 with FP8 current scaling and virtual stages, Megatron-Bridge MoE
# with EP and the MoE kernel switches; and two rows of the Korthikanti table as one list.
set -u
perfsim="$1"
mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# TABLE NAME: the table's header and that row alone (a table of one row simulates one row).
subset() {
  grep -v '^#' "$configs/validation/$1.csv" | head -1
  grep -v '^#' "$configs/validation/$1.csv" | grep "^$2," || fail "no row $2 in $1.csv"
}

# The printed command, run as printed (perfsim under mpiexec), in JSON: its iteration in s.
simulated_s() {
  local command="$1"
  eval "\"$mpiexec\" -n 1 \"$perfsim\" ${command#perfsim } --results '' --format json --quiet" \
    2>simulate.err | python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_us"] * 1e-6)'
}

# JSON TABLE NAME CHECKS...: explains the row, runs its command, compares; each CHECK a flag
# the command must hold; JSON 1: the --format json explanation too (a second validate run).
check_row() {
  local json="$1" table="$2" name="$3"
  shift 3
  subset "$table" "$name" >"$name.csv"
  "$perfsim" validate runs "$name.csv" --explain "$name" --quiet >"$name.txt" 2>"$name.err" ||
    fail "validate runs --explain $name failed: $(cat "$name.err")"
  local command predicted
  command="$(grep '^  perfsim simulate ' "$name.txt" | sed 's/^  //')"
  [ -n "$command" ] || fail "$name: no simulate command printed: $(cat "$name.txt")"
  predicted="$(sed -n 's/^  measured [0-9.]* s, predicted \([0-9.]*\) s.*/\1/p' "$name.txt")"
  [ -n "$predicted" ] || fail "$name: no predicted time printed: $(cat "$name.txt")"
  for flag in "$@"; do
    case " $command " in
      *" $flag "*) ;;
      *) fail "$name: the command lacks $flag: $command" ;;
    esac
  done
  grep -q "^where the time goes" "$name.txt" || fail "$name: no breakdown: $(cat "$name.txt")"
  grep -q "^memory per GPU" "$name.txt" || fail "$name: no memory line: $(cat "$name.txt")"
  local simulate_s
  simulate_s="$(simulated_s "$command")" || fail "$name: the command failed: $(cat simulate.err)"
  local printed
  printed="$(printf '%.4f' "$simulate_s")"
  echo "$name: validate runs predicted $predicted s; the printed command gives $simulate_s s"
  [ "$printed" = "$predicted" ] || fail "$name: simulate gives $printed s, validate runs $predicted s"

  # JSON: the same command, the full-precision prediction, simulate's report of the row.
  [ "$json" -eq 1 ] || return 0
  "$perfsim" validate runs "$name.csv" --explain "$name" --quiet --format json >"$name.json" ||
    fail "$name: --format json failed"
  python3 - "$name.json" "$command" "$simulate_s" <<'PY' || fail "$name: JSON explanation differs"
import json, sys
doc = json.load(open(sys.argv[1]))
(entry,) = doc["explanations"]
assert entry["command"] == sys.argv[2], (entry["command"], sys.argv[2])
assert "perfsim simulate " + " ".join(entry["arguments"]) == entry["command"] or "'" in entry["command"]
simulated = float(sys.argv[3])
assert abs(entry["predicted_s"] - simulated) <= 1e-6 * simulated, (entry["predicted_s"], simulated)
assert abs(entry["report"]["iteration_us"] * 1e-6 - simulated) <= 1e-6 * simulated
assert [line["key"] for line in entry["report"]["breakdown"]], entry["report"]
assert entry["report"]["memory"]["stages"], entry["report"]["memory"]
PY
}

check_row 1 vtrain-singlenode-a100 vtrain-001 --get-batch-sync "--dtype fp16" "--layers 24" \
  "--attention unfused" --dropout
check_row 0 published-megatron-bridge-h100 mbridge2511-llama3-70b-64gpu "--fp8-recipe current" \
  "--virtual-stages 5" "--dtype fp8" --tp-comm-overlap "--cross-entropy-fusion-impl te" \
  "--grad-reduce-dtype bf16"
check_row 1 published-megatron-bridge-moe-h100 mbridge2602-qwen3-30b-a3b-16gpu "--ep 8" \
  --moe-router-fusion --moe-permute-fusion --moe-router-force-load-balancing "--etp 1"

# Two rows as one comma-separated list, in the order asked for, from the whole table.
"$perfsim" validate runs "$configs/validation/korthikanti2022.csv" --quiet \
  --explain korthikanti-22b-sp-selective,korthikanti-22b-full-recompute >list.txt 2>list.err ||
  fail "--explain with a list failed: $(cat list.err)"
[ "$(grep -c '^explain ' list.txt)" -eq 2 ] || fail "two rows asked, not two explained: $(cat list.txt)"
grep '^explain ' list.txt | head -1 | grep -q 'korthikanti-22b-sp-selective' ||
  fail "the rows are not in the order asked for: $(grep '^explain ' list.txt)"
grep -q -- '--timer-syncs' list.txt || fail "the Korthikanti rows' timer_syncs is not in the command"

# A name that is not a row of the table: an input error (exit 2) that says so.
"$perfsim" validate runs "$configs/validation/korthikanti2022.csv" --quiet \
  --explain no-such-row >unknown.out 2>&1
status=$?
[ "$status" -eq 2 ] || fail "an unknown row gave exit $status, want 2: $(cat unknown.out)"
grep -q 'row "no-such-row" is not in the table' unknown.out ||
  fail "the error does not say the row is not in the table: $(cat unknown.out)"
# Held-fold predictions have no calibration file: refused with the reason.
"$perfsim" validate runs "$configs/validation/korthikanti2022.csv" --quiet --cv 2 \
  --explain korthikanti-22b-sp-selective >cv.out 2>&1
[ $? -eq 2 ] || fail "--explain with --cv was not refused: $(cat cv.out)"
grep -q -- "--cv" cv.out || fail "the refusal does not name --cv: $(cat cv.out)"
echo "PASS"
