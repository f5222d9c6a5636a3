#!/usr/bin/env bash
# One number for one layout: `simulate --model` and `plan` apply the same end-to-end calibration
# as `validate runs` (host costs, GEMM time scale), so simulating a row of the Korthikanti table
# by hand gives the prediction `validate runs` prints for it, and `--calibration none` gives the
# engine's uncalibrated time that validate runs prints as simulated_s.
set -u
perfsim="$1"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

"$perfsim" validate runs "$configs/validation/korthikanti2022.csv" --format csv >runs.csv 2>runs.err ||
  fail "validate runs failed: $(cat runs.err)"
# korthikanti-22b-sp-selective: TP 8, micro-batch 4 = global batch, selective, SP, A100 DGX.
row="$(grep '^"korthikanti-22b-sp-selective"' runs.csv)" || fail "no 22B selective row in runs.csv"
predicted_s="$(echo "$row" | awk -F, '{ print $(NF-6) }')"
simulated_s="$(echo "$row" | awk -F, '{ print $(NF-5) }')"

simulate() {
  "$perfsim" simulate --model "$configs/models/korthikanti-22b.json" --tp 8 --micro-batch 4 \
    --global-batch 4 --recompute selective --sequence-parallel --get-batch-sync --timer-syncs \
    --topology "$configs/topologies/dgx-a100.json" --device A100-80GB --results "" \
    --format json "$@" 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_us"] * 1e-6)'
}
calibrated_s="$(simulate)" || fail "simulate --model failed"
uncalibrated_s="$(simulate --calibration none)" || fail "simulate --calibration none failed"
echo "validate runs: predicted $predicted_s s, simulated $simulated_s s"
echo "simulate --model: $calibrated_s s; --calibration none: $uncalibrated_s s"
same() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * b) }'; }
same "$calibrated_s" "$predicted_s" || fail "simulate --model differs from validate runs' prediction"
same "$uncalibrated_s" "$simulated_s" || fail "--calibration none differs from validate runs' simulated_s"
# The calibration adds host time and A100 GEMM time: the calibrated run is slower.
awk -v a="$calibrated_s" -v b="$uncalibrated_s" 'BEGIN { exit !(a > b * 1.02) }' ||
  fail "the calibration changed the 22B iteration by less than 2%"

# A calibration file that is not one: an error naming the file, exit 2.
echo '{"schema": "something-else"}' >bad.json
"$perfsim" simulate --model "$configs/models/korthikanti-22b.json" --tp 8 --micro-batch 4 \
  --global-batch 4 --topology "$configs/topologies/dgx-a100.json" --device A100-80GB \
  --results "" --calibration bad.json >bad.out 2>&1
status=$?
[ "$status" -eq 2 ] || fail "a bad calibration file gave exit $status, want 2: $(cat bad.out)"
grep -q "bad.json" bad.out || fail "the error does not name the file: $(cat bad.out)"

# plan names the calibration it ranked layouts with.
"$perfsim" plan korthikanti-22b --topology dgx-a100 --device A100-80GB --global-batch 4 \
  --max-micro-batch 4 --top 2 --quiet >plan.txt 2>&1 || fail "plan failed: $(cat plan.txt)"
grep -q "calibration: host" plan.txt || fail "plan does not say which calibration it applied"

# simulate takes shipped config names as plan and RUNS.csv do, from any directory: the same run.
by_name_s="$("$perfsim" simulate --model korthikanti-22b --tp 8 --micro-batch 4 --global-batch 4 \
  --recompute selective --sequence-parallel --get-batch-sync --timer-syncs --topology dgx-a100 \
  --device A100-80GB --results "" --format json 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_us"] * 1e-6)')" ||
  fail "simulate with --model/--topology names failed"
same "$by_name_s" "$calibrated_s" || fail "by name $by_name_s s, by file $calibrated_s s"
"$perfsim" simulate --model no-such-model --topology dgx-a100 --device A100-80GB --results "" \
  >noname.out 2>&1
status=$?
[ "$status" -eq 2 ] || fail "an unknown model name gave exit $status, want 2: $(cat noname.out)"
grep -q "no-such-model" noname.out || fail "the error does not name the model: $(cat noname.out)"
grep -q "llama3-70b, llama3-8b" noname.out || fail "the error does not list the shipped names"
# A shipped name typed with other capitals is the same file.
by_capitals_s="$("$perfsim" simulate --model Korthikanti-22B --tp 8 --micro-batch 4 --global-batch 4 \
  --recompute selective --sequence-parallel --get-batch-sync --timer-syncs --topology DGX-A100 \
  --device A100-80GB --results "" --format json 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_us"] * 1e-6)')" ||
  fail "simulate with --model Korthikanti-22B failed"
same "$by_capitals_s" "$by_name_s" || fail "Korthikanti-22B $by_capitals_s s, korthikanti-22b $by_name_s s"
echo "PASS"
