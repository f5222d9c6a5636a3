#!/usr/bin/env bash
# Two interleaved pipeline stages (PP 2 x VP 2, Megatron with overlap_p2p_comm) end to end: one
# rank pair carries activations and gradients both ways. `simulate` runs it without deadlock
# in one process and under `mpirun -n 2` and `-n 4`, folded and unfolded, with the same
# iteration time; without overlap_p2p_comm it exits 2 naming the switch (Megatron refuses it).
set -u
perfsim="$1" mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

llm=(simulate --model "$configs/models/llama3-8b.json" --tp 1 --pp 2 --dp 2 --virtual-stages 2
     --micro-batch 1 --global-batch 8 --topology "$configs/topologies/hgx-h100.json"
     --device "$configs/devices/H100-SXM.json" --results "" --quiet)
timeout 200 "$perfsim" "${llm[@]}" --fold none >"$dir/one.txt" 2>&1 ||
  { cat "$dir/one.txt"; fail "one process did not simulate"; }
reference="$(grep "^iteration time" "$dir/one.txt")"
[ -n "$reference" ] || fail "no iteration time"
echo "$reference"
for processes in 2 4; do
  for fold in none auto; do
    timeout 200 "$mpiexec" -n "$processes" --oversubscribe "$perfsim" "${llm[@]}" --fold "$fold" \
      >"$dir/$processes-$fold.txt" 2>&1 ||
      { cat "$dir/$processes-$fold.txt"; fail "-n $processes --fold $fold did not simulate"; }
    [ "$(grep "^iteration time" "$dir/$processes-$fold.txt")" = "$reference" ] ||
      fail "-n $processes --fold $fold: $(grep "^iteration time" "$dir/$processes-$fold.txt")"
  done
done

timeout 60 "$perfsim" "${llm[@]}" --no-overlap-p2p-comm >"$dir/batched.txt" 2>&1
status=$?
[ "$status" -eq 2 ] || fail "PP 2 interleaving without overlap_p2p_comm exited with $status"
grep -q "overlap_p2p_comm" "$dir/batched.txt" || fail "no reason given"
echo "PASS"
