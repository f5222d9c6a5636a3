#!/usr/bin/env bash
# `perfsim memory --llm` takes simulate's switches that change what the memory closed form
# counts (--distributed-optimizer, --fp8-recipe, --no-fp8-all-gather, --fp8-param-gather,
# --cross-entropy-loss-fusion with its impl, --moe-token-dispatcher, --make-vocab-size-divisible-by),
# spelled as simulate spells them: for one layout both print the same bytes per stage, and each
# switch moves the figure it should move (a switch memory ignored would fail here).
set -u
perfsim="$1"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# Per-stage total bytes, one per line, from simulate's or memory's JSON.
simulate_totals() {
  timeout 200 "$perfsim" simulate "$@" --topology "$configs/topologies/hgx-h100-2node.json" \
    --device H100-SXM --results "" --format json >"$dir/sim.json" 2>"$dir/sim.err" ||
    { cat "$dir/sim.err"; fail "simulate $*"; }
  python3 -c 'import json,sys; [print(s["total_bytes"]) for s in json.load(open(sys.argv[1]))["memory"]["stages"]]' \
    "$dir/sim.json"
}
memory_totals() {
  timeout 60 "$perfsim" memory --llm "$@" --device H100-SXM --format json >"$dir/mem.json" \
    2>"$dir/mem.err" || { cat "$dir/mem.err"; fail "memory --llm $*"; }
  python3 -c 'import json,sys; [print(s["total_bytes"]) for s in json.load(open(sys.argv[1]))["stages"]]' \
    "$dir/mem.json"
}
agree() {
  local sim mem
  sim="$(simulate_totals "$@")"
  mem="$(memory_totals "$@")"
  [ -n "$sim" ] && [ "$sim" = "$mem" ] || fail "simulate ($sim) and memory --llm ($mem) differ: $*"
  echo "$mem"
}

dense=(--model llama3-8b --layers 4 --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 8
       --dtype fp8 --distributed-optimizer)
fp8_sp=("${dense[@]}" --sequence-parallel)
base_sp="$(agree "${fp8_sp[@]}")"
current="$(agree "${fp8_sp[@]}" --fp8-recipe blockwise)"
[ "$current" != "$base_sp" ] || fail "--fp8-recipe blockwise (inputs gathered in bf16) moved nothing"
bf16_gather="$(agree "${fp8_sp[@]}" --no-fp8-all-gather)"
[ "$bf16_gather" != "$base_sp" ] || fail "--no-fp8-all-gather moved nothing"
fused="$(agree "${fp8_sp[@]}" --cross-entropy-loss-fusion --cross-entropy-fusion-impl te)"
[ "$fused" != "$base_sp" ] || fail "--cross-entropy-loss-fusion moved nothing"
padded="$(agree "${fp8_sp[@]}" --make-vocab-size-divisible-by 256)"
[ "$padded" != "$base_sp" ] || fail "--make-vocab-size-divisible-by 256 (vocabulary padded) moved nothing"
primary="$(agree "${fp8_sp[@]}" --fp8-param-gather)"
[ "$primary" != "$base_sp" ] || fail "--fp8-param-gather (FP8 primary weights) moved nothing"
zero0="$(memory_totals "${fp8_sp[@]/--distributed-optimizer/}")"
[ "$zero0" != "$base_sp" ] || fail "--distributed-optimizer (ZeRO 1) moved nothing"

agree "${dense[@]}" >/dev/null  # without sequence parallelism

# With a load imbalance the flex dispatcher keeps the busiest rank's routed rows for the combine,
# the alltoall dispatcher the rank's own s b top_k rows.
moe=(--model mixtral-8x7b --layers 4 --tp 1 --pp 2 --dp 8 --ep 8 --etp 1 --micro-batch 1
     --global-batch 16 --distributed-optimizer --moe-imbalance 2)
alltoall="$(agree "${moe[@]}")"
flex="$(agree "${moe[@]}" --moe-token-dispatcher flex)"
[ "$flex" != "$alltoall" ] || fail "--moe-token-dispatcher flex moved nothing"
echo "memory --llm agrees with simulate's memory line on 9 layouts"
