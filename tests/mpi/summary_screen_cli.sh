#!/usr/bin/env bash
# The first screen (issue 19): the default run, a 2,048-rank synthetic run, a 2,048-rank LLM
# (TP 8 x PP 4 x DP 64 of a small model) and `plan` print the answer (iteration time, MFU,
# memory verdict) in their first 25 lines and stay under 60 lines in all (standard output and
# error together); --format json carries the figures the text prints; --quiet silences
# standard error.
set -u
perfsim="$1" mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# $1 output file, $2 what it is: the answer in the first 25 lines, under 60 in all.
check_screen() {
  local lines
  lines=$(wc -l < "$1")
  echo "$2: $lines lines"
  [ "$lines" -lt 60 ] || fail "$2: $lines lines (limit: under 60)"
  head -n 25 "$1" | grep -qE "^iteration time +[0-9]+\.[0-9]+ ms" ||
    fail "$2: no iteration time in the first 25 lines"
}
check_llm_screen() {
  check_screen "$1" "$2"
  head -n 25 "$1" | grep -qE "MFU [0-9]+\.[0-9] %" || fail "$2: no MFU in the first 25 lines"
  head -n 25 "$1" | grep -qE "^memory per GPU \(closed form\): (fits|OUT OF MEMORY)" ||
    fail "$2: no memory verdict in the first 25 lines"
}

# The embedded default scenario (64 simulated ranks).
timeout 240 "$mpiexec" -n 2 --oversubscribe "$perfsim" > default.txt 2>&1 ||
  { cat default.txt; fail "the default run failed"; }
cat default.txt
check_llm_screen default.txt "default run"
grep -q "^p2p:" default.txt && fail "the default run lists point-to-point pairs"
grep -q "^simulator: [0-9]* ops on 64 ranks in [0-9.]* s wall$" default.txt ||
  fail "no simulator line"

# 2,048 synthetic ranks.
timeout 120 "$mpiexec" -n 2 --oversubscribe "$perfsim" simulate --ranks 2048 --group-size 8 \
  --repetitions 5 --results "" > synthetic.txt 2>&1 || { cat synthetic.txt; fail "synthetic run"; }
cat synthetic.txt
check_screen synthetic.txt "2,048 synthetic ranks"

# 2,048 LLM ranks: a small model on 256 DGX A100 nodes.
sed 's/"nodes": 128,/"nodes": 256,/' "$configs/topologies/dgx-a100-128node.json" > topology.json
cat > model.json <<'JSON'
{
  "schema": "perfsim-llm-model/1",
  "name": "tiny-gpt",
  "source": "a small GPT shape for output tests",
  "layers": 8, "hidden": 512, "heads": 8, "ffn_hidden": 2048, "vocab": 4096, "seq_len": 512,
  "micro_batch": 1, "global_batch": 256, "dtype": "bf16"
}
JSON
llm=(simulate --model model.json --tp 8 --pp 4 --dp 64 --topology topology.json
     --device "$configs/devices/A100-80GB.json" --results "")
timeout 240 "$mpiexec" -n 2 --oversubscribe "$perfsim" "${llm[@]}" > llm.txt 2>&1 ||
  { cat llm.txt; fail "LLM run"; }
cat llm.txt
check_llm_screen llm.txt "2,048 LLM ranks"
head -n 25 llm.txt | grep -q "pipeline bubble .*(1F1B ideal 42.9 %)" ||
  fail "no bubble line against the 1F1B ideal (P-1)/(M+P-1) = 3/7"

# Details on request stay a screen each: classes of identical ranks, one row per group kind.
timeout 240 "$mpiexec" -n 2 --oversubscribe "$perfsim" "${llm[@]}" --detail ranks,groups \
  --quiet > detail.txt 2>&1 || { cat detail.txt; fail "LLM run, --detail"; }
sed -n '/^ranks with identical results/,$p' detail.txt
extra=$(( $(wc -l < detail.txt) - $(wc -l < llm.txt) ))
[ "$extra" -lt 40 ] || fail "--detail ranks,groups added $extra lines for 2,048 ranks"
grep -q "^ranks with identical results (4 classes of 2048 ranks)" detail.txt ||
  fail "2,048 ranks of 4 pipeline stages are not 4 classes"
[ "$(grep -c '^pipeline p2p ' detail.txt)" -eq 1 ] || fail "point-to-point pairs not one row"

# The same as JSON, quiet: standard output is one JSON document, standard error empty.
timeout 240 "$mpiexec" -n 2 --oversubscribe "$perfsim" "${llm[@]}" --format json --quiet \
  > llm.json 2> llm.err || { cat llm.json llm.err; fail "LLM run, JSON"; }
[ ! -s llm.err ] || { cat llm.err; fail "--quiet wrote to standard error"; }
grep -q '^  "schema": "perfsim-simulate/1",$' llm.json || fail "no schema in the JSON"
grep -q '^  "ranks": 2048,$' llm.json || fail "the JSON does not say 2048 ranks"
json_ms=$(sed -n 's/^  "iteration_us": \([0-9.e+-]*\),$/\1/p' llm.json)
text_ms=$(sed -n 's/^iteration time *\([0-9.]*\) ms.*/\1/p' llm.txt)
awk -v j="$json_ms" -v t="$text_ms" 'BEGIN { d = j / 1000 - t; if (d < 0) d = -d; exit !(d <= 0.0005) }' ||
  fail "JSON iteration $json_ms us, text $text_ms ms"

# plan: the best layout's summary first.
timeout 120 "$perfsim" plan model.json --gpus 16 --global-batch 32 \
  --topology "$configs/topologies/dgx-a100-8node.json" --device A100-80GB --top 3 \
  > plan.txt 2>&1 || { cat plan.txt; fail "plan"; }
cat plan.txt
check_llm_screen plan.txt "plan"
grep -q "^best layout:" plan.txt || fail "plan names no best layout"
timeout 120 "$perfsim" plan model.json --gpus 16 --global-batch 32 --quiet --format json \
  --topology "$configs/topologies/dgx-a100-8node.json" --device A100-80GB --top 3 \
  > plan.json || fail "plan --format json"
grep -q '^  "schema": "perfsim-plan/1",$' plan.json || fail "no plan schema in the JSON"

# One rank of a multi-rank workload, no --timeline (the empty timeline sink was once called).
timeout 60 "$perfsim" simulate --ranks 4 --single-rank 1 --results "" > single.txt 2>&1 ||
  { cat single.txt; fail "single-rank run"; }
check_screen single.txt "single rank"
echo "PASS"
