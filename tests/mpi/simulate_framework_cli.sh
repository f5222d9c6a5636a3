#!/usr/bin/env bash
# `simulate --framework NAME`: the framework's switches fill what the command line leaves out
# and the status line names them; the same switches given by hand predict the same iteration; a
# --no-... form keeps one of them off; an unknown framework is refused, naming the known ones.
set -u
perfsim="$1"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

simulate() {  # iteration seconds on stdout; standard error in err.txt
  "$perfsim" simulate --model korthikanti-22b --tp 8 --micro-batch 4 --global-batch 4 \
    --recompute selective --sequence-parallel --topology dgx-a100 --device A100-80GB \
    --results "" --format json "$@" 2>err.txt |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["iteration_us"] * 1e-6)'
}
same() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * b) }'; }

preset="$(simulate --framework megatron-lm-2021)" || fail "$(cat err.txt)"
line="$(grep '^perfsim: framework megatron-lm-2021: sets ' err.txt)" || { cat err.txt; fail "no framework line"; }
for flag in "--attention unfused" --dropout --no-overlap-p2p-comm --get-batch-sync --timer-syncs; do
  case "$line" in *"$flag"*) ;; *) fail "the framework line lacks $flag: $line" ;; esac
done
by_hand="$(simulate --attention unfused --dropout --no-overlap-p2p-comm --p2p-scatter-gather \
  --get-batch-sync --timer-syncs)" || fail "$(cat err.txt)"
echo "megatron-lm-2021: $preset s; its switches by hand: $by_hand s"
same "$preset" "$by_hand" || fail "--framework predicts $preset s, its switches by hand $by_hand s"

no_timers="$(simulate --framework megatron-lm-2021 --no-timer-syncs)" || fail "$(cat err.txt)"
grep -q -- '--timer-syncs' err.txt && fail "the framework line names a switch the command turned off"
by_hand="$(simulate --attention unfused --dropout --no-overlap-p2p-comm --p2p-scatter-gather \
  --get-batch-sync)" || fail "$(cat err.txt)"
echo "--no-timer-syncs: $no_timers s; by hand: $by_hand s"
same "$no_timers" "$by_hand" || fail "--no-timer-syncs under the framework: $no_timers s, by hand $by_hand s"
same "$no_timers" "$preset" && fail "--no-timer-syncs changed nothing ($no_timers s)"

core="$(simulate --framework megatron-core)" || fail "$(cat err.txt)"
grep -q '^perfsim: framework megatron-core: sets none' err.txt || { cat err.txt; fail "megatron-core set a switch"; }
plain="$(simulate)" || fail "$(cat err.txt)"
same "$core" "$plain" || fail "megatron-core ($core s) differs from simulate's defaults ($plain s)"

simulate --framework nemo2 >/dev/null && fail "an unknown framework was accepted"
grep -q 'megatron-bridge' err.txt || { cat err.txt; fail "the refusal does not name the frameworks"; }
echo "PASS"
