#!/usr/bin/env bash
# `perfsim simulate --fold` end to end under `mpirun -n 2`: a generated LLM run folded onto its
# pipeline-stage representatives writes the same per-rank HDF5 results and iteration time as
# the run that simulates every rank, and a workload that cannot fold says why.
set -u
perfsim="$1" mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

llm=(simulate --model "$configs/models/llama3-8b.json" --tp 2 --pp 4 --dp 2 --virtual-stages 2
     --sequence-parallel --zero 1 --global-batch 8 --topology "$configs/topologies/hgx-h100.json"
     --nodes 2 --device "$configs/devices/H100-SXM.json" --run-name r)
# The report (stdout) and the progress lines (stderr) in files of their own: written to one
# file by two processes, a progress line could land inside a report line and lose its start.
for fold in auto none; do
  timeout 200 "$mpiexec" -n 2 --oversubscribe "$perfsim" "${llm[@]}" --fold "$fold" \
    --results "$dir/$fold.h5" >"$dir/$fold.txt" 2>"$dir/$fold.err"
  status=$?
  cat "$dir/$fold.txt" "$dir/$fold.err" | grep -E "fold|^iteration time|^simulator"
  [ "$status" -eq 0 ] || fail "--fold $fold exited with $status"
done
grep -q "^perfsim: fold: 4 representatives for 16 ranks" "$dir/auto.err" || fail "did not fold"
grep -q "^perfsim: fold" "$dir/none.err" && fail "--fold none folded"
folded_time="$(grep "^iteration time" "$dir/auto.txt")"
[ -n "$folded_time" ] || fail "no iteration time"
[ "$folded_time" = "$(grep "^iteration time" "$dir/none.txt")" ] || fail "iteration times differ"
if command -v h5diff >/dev/null; then
  h5diff "$dir/auto.h5" "$dir/none.h5" || fail "results files differ"
fi

timeout 60 "$mpiexec" -n 2 --oversubscribe "$perfsim" simulate --results "" --ranks 8 \
  --fold auto >"$dir/synthetic.txt" 2>&1 || fail "synthetic run failed"
grep -q "fold: off (synthetic workload" "$dir/synthetic.txt" || fail "no reason for not folding"
echo "PASS"
