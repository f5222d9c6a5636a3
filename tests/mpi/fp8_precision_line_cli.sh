#!/usr/bin/env bash
# simulate's precision line says which FP8 recipe the run models and what it adds: delayed
# scaling its amax reductions over TP x DP x CP, current scaling and blockwise scaling their own
# names (README "FP8 delayed scaling's amax reductions", "FP8 current scaling").
set -u
perfsim="$1"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }

precision() {
  timeout 120 "$perfsim" simulate --model llama3-8b --layers 2 --tp 2 --pp 1 --dp 2 \
    --micro-batch 1 --global-batch 4 --dtype fp8 "$@" \
    --topology "$configs/topologies/hgx-h100.json" --device H100-SXM --results "" 2>&1 |
    grep -m1 "Transformer Engine recipe" || fail "simulate $* printed no FP8 recipe"
}
delayed="$(precision)"
echo "$delayed" | grep -q "delayed scaling, amax histories all-reduced over TP x DP x CP" ||
  fail "delayed scaling (the default) does not state its amax reductions: $delayed"
current="$(precision --fp8-recipe current)"
echo "$current" | grep -q "; current scaling" || fail "no current scaling: $current"
echo "$current" | grep -q "delayed" && fail "current scaling says delayed: $current"
blockwise="$(precision --fp8-recipe blockwise)"
echo "$blockwise" | grep -q "; blockwise scaling" || fail "no blockwise scaling: $blockwise"
echo "$blockwise" | grep -q "delayed" && fail "blockwise scaling says delayed: $blockwise"
echo "the precision line names each FP8 recipe"
