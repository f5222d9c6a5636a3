#!/usr/bin/env bash
# Megatron-Core's --pipeline-model-parallel-layout end to end: `simulate --pp-layout` gives the
# same iteration time and per-stage layers as the equivalent `--pp-layers` (the embedding and
# the loss where the generator holds them anyway), in one process and under `mpirun -n 2`;
# first and last stages of the embedding / the loss alone simulate;
# `memory --llm` takes it too; a malformed layout exits 2 naming the character; an uneven
# split names the options; a RUNS.csv row carries pp_layers and pp_layout into `validate runs`.
set -u
perfsim="$1" mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# llama3-8b: 32 layers on PP 4 x VP 2, per virtual stage (chunk-major) 3,4,5,4 | 4,5,4,3.
base=(simulate --model "$configs/models/llama3-8b.json" --tp 1 --pp 4 --dp 1 --micro-batch 1
      --global-batch 8 --topology "$configs/topologies/hgx-h100.json"
      --device "$configs/devices/H100-SXM.json" --results "" --detail memory)
llm=("${base[@]}" --virtual-stages 2)
layout='Et*3|t*4|t*5|t*4|(t*4|t*5|)*1,t*4|t*3L'
timeout 200 "$perfsim" "${llm[@]}" --pp-layers 3,4,5,4,4,5,4,3 >"$dir/layers.txt" 2>&1 ||
  { cat "$dir/layers.txt"; fail "--pp-layers did not simulate"; }
timeout 200 "$perfsim" "${llm[@]}" --pp-layout "$layout" >"$dir/layout.txt" 2>&1 ||
  { cat "$dir/layout.txt"; fail "--pp-layout did not simulate"; }
reference="$(grep "^iteration time" "$dir/layers.txt")"
[ -n "$reference" ] || fail "no iteration time"
echo "$reference"
[ "$(grep "^iteration time" "$dir/layout.txt")" = "$reference" ] ||
  fail "--pp-layout: $(grep "^iteration time" "$dir/layout.txt")"
grep -qF "(layout $layout)" "$dir/layout.txt" || fail "layout not named"
for stage in "stage 0: 7 layers" "stage 1: 9 layers" "stage 2: 9 layers" "stage 3: 7 layers"; do
  grep -q "$stage" "$dir/layout.txt" || fail "--pp-layout: no \"$stage\""
  grep -q "$stage" "$dir/layers.txt" || fail "--pp-layers: no \"$stage\""
done
timeout 200 "$mpiexec" -n 2 --oversubscribe "$perfsim" "${llm[@]}" --pp-layout "$layout" \
  >"$dir/layout-2.txt" 2>&1 || { cat "$dir/layout-2.txt"; fail "-n 2 did not simulate"; }
[ "$(grep "^iteration time" "$dir/layout-2.txt")" = "$reference" ] ||
  fail "-n 2: $(grep "^iteration time" "$dir/layout-2.txt")"

# End stages of the embedding or the loss alone simulate: PP 4 holding E, 16, 16 and L.
timeout 200 "$perfsim" "${base[@]}" --pp-layout 'E|t*16|t*16|L' >"$dir/ends.txt" 2>&1 ||
  { cat "$dir/ends.txt"; fail "a stage of the embedding alone did not simulate"; }
grep -q "stage 0: 0 layers" "$dir/ends.txt" || fail "stage 0 holds layers"
grep -q "stage 1: 16 layers" "$dir/ends.txt" || fail "stage 1 does not hold 16 layers"
grep -q "stage 3: 0 layers" "$dir/ends.txt" || fail "stage 3 holds layers"

# The memory closed form: the same stages either way.
memory=(memory --llm --model "$configs/models/llama3-8b.json" --tp 1 --pp 4 --dp 1
        --virtual-stages 2 --micro-batch 1 --format csv)
timeout 60 "$perfsim" "${memory[@]}" --pp-layers 3,4,5,4,4,5,4,3 >"$dir/mem-layers.csv" 2>&1 ||
  { cat "$dir/mem-layers.csv"; fail "memory --pp-layers failed"; }
timeout 60 "$perfsim" "${memory[@]}" --pp-layout "$layout" >"$dir/mem-layout.csv" 2>&1 ||
  { cat "$dir/mem-layout.csv"; fail "memory --pp-layout failed"; }
cmp -s "$dir/mem-layers.csv" "$dir/mem-layout.csv" || fail "memory differs: $(diff \
  "$dir/mem-layers.csv" "$dir/mem-layout.csv")"

# A malformed layout names its character; an uneven even split names the options.
timeout 60 "$perfsim" "${llm[@]}" --pp-layout 'Et*3|t*4|t*5|t*4|t*4|t*5|t*4|t*3x' \
  >"$dir/bad.txt" 2>&1
status=$?
[ "$status" -eq 2 ] || fail "a malformed layout exited with $status"
grep -q "pp_layout.*character 33: 'x' is not a layout element" "$dir/bad.txt" ||
  { cat "$dir/bad.txt"; fail "no character named"; }
timeout 60 "$perfsim" "${base[@]}" --virtual-stages 3 >"$dir/uneven.txt" 2>&1
status=$?
[ "$status" -eq 2 ] || fail "32 layers over PP 4 x VP 3 exited with $status"
grep -q "layers 32 is not divisible by 12; an uneven split is given by pp_layers" \
  "$dir/uneven.txt" || { cat "$dir/uneven.txt"; fail "the options are not named"; }

cat >"$dir/runs.csv" <<CSV
name,model,gpus,tp,pp,dp,virtual_stages,micro_batch,global_batch,device,topology,pp_layers,pp_layout,measured_iteration_s
listed,llama3-8b,4,1,4,1,2,1,8,H100-SXM,hgx-h100,3;4;5;4;4;5;4;3,,1.0
layout,llama3-8b,4,1,4,1,2,1,8,H100-SXM,hgx-h100,,"$layout",1.0
CSV
timeout 200 "$perfsim" validate runs "$dir/runs.csv" --format csv >"$dir/runs.txt" 2>&1 ||
  { cat "$dir/runs.txt"; fail "validate runs failed"; }
grep -qF "(layers 3,4,5,4,4,5,4,3)" "$dir/runs.txt" || fail "pp_layers did not reach the layout"
grep -qF "(layout $layout)" "$dir/runs.txt" || fail "pp_layout did not reach the layout"
echo "PASS"
