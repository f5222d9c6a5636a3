#!/usr/bin/env bash
# Megatron-Core's pipeline split end to end: `simulate` takes the first/last-stage layers and
# the embedding/loss accounting, names them in the summary and holds each stage's layers in the
# memory table; a split that does not divide exits 2 naming it; a RUNS.csv row carries the
# same switches into `validate runs`.
set -u
perfsim="$1"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# llama3-8b: 32 layers on PP 4 x VP 2, first and last stage 6, the middle (32 - 12) / 2 = 10.
llm=(simulate --model "$configs/models/llama3-8b.json" --tp 1 --pp 4 --dp 1 --virtual-stages 2
     --micro-batch 1 --global-batch 8 --topology "$configs/topologies/hgx-h100.json"
     --device "$configs/devices/H100-SXM.json" --results "" --quiet)
timeout 120 "$perfsim" "${llm[@]}" --first-stage-layers 6 --last-stage-layers 6 \
  --detail memory >"$dir/split.txt" 2>&1 || fail "the first/last-stage split did not simulate"
grep -q "(first stage 6 layers, last stage 6 layers)" "$dir/split.txt" || fail "split not named"
grep -q "stage 1: 10 layers" "$dir/split.txt" || fail "middle stage does not hold 10 layers"
grep -q "stage 3: 6 layers" "$dir/split.txt" || fail "last stage does not hold 6 layers"

# 32 + 2 = 34 does not split over PP 4 x VP 2.
timeout 60 "$perfsim" "${llm[@]}" --account-for-embedding-in-pipeline-split \
  --account-for-loss-in-pipeline-split >"$dir/bad.txt" 2>&1
status=$?
[ "$status" -eq 2 ] || fail "an impossible split exited with $status"
grep -q "34 is not divisible by PP x virtual stages 8" "$dir/bad.txt" || fail "no reason given"

cat >"$dir/runs.csv" <<CSV
name,model,gpus,tp,pp,dp,virtual_stages,micro_batch,global_batch,device,topology,first_stage_layers,last_stage_layers,account_for_embedding,account_for_loss,measured_iteration_s
split,llama3-8b,4,1,4,1,2,1,8,H100-SXM,hgx-h100,6,6,,,1.0
CSV
timeout 120 "$perfsim" validate runs "$dir/runs.csv" --format csv >"$dir/runs.txt" 2>&1 ||
  fail "validate runs failed"
grep -q "(first stage 6 layers, last stage 6 layers)" "$dir/runs.txt" ||
  fail "the RUNS.csv columns did not reach the layout"
echo "PASS"
