#!/usr/bin/env bash
# The DLRM commands end to end: `perfsim shard` ranks all six sharders of seed 001 Table III on
# a 4-GPU DLRM within 10 seconds (issue 6), `mpirun -n 2 perfsim simulate --dlrm` on the
# 8-GPU config reports a finite iteration with collectives matched across processes, and a
# memory cap no table fits under is an error naming the table (exit code 2).
set -u
perfsim="$1" mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
out="$(mktemp)"

start_ns=$(date +%s%N)
timeout 60 "$perfsim" shard "$configs/dlrm/dlrm-small-4gpu.json" \
  --topology "$configs/topologies/4xa100.json" --device "$configs/devices/A100-40GB.json" >"$out" 2>&1
status=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
cat "$out"
[ "$status" -eq 0 ] || fail "perfsim shard exited with $status"
for sharder in naive random size_greedy lookup_greedy norm_lookup_greedy size_lookup_greedy; do
  grep -qE "^ +[1-6] +$sharder +[0-9.]+ " "$out" || fail "no ranked row for $sharder"
done
grep -q "^chosen: " "$out" || fail "no chosen plan"
grep -q "^  rank 3:" "$out" || fail "the plan does not list rank 3"
echo "perfsim shard took ${elapsed_ms} ms"
[ "$elapsed_ms" -lt 10000 ] || fail "took ${elapsed_ms} ms (limit 10 s)"

timeout 120 "$mpiexec" -n 2 --oversubscribe "$perfsim" simulate --results "" \
  --dlrm "$configs/dlrm/dlrm-param-8xv100.json" --sharder naive \
  --topology "$configs/topologies/dgx1-v100.json" --device "$configs/devices/V100-SXM2.json" \
  >"$out" 2>&1
status=$?
cat "$out"
[ "$status" -eq 0 ] || fail "simulate --dlrm exited with $status"
grep -q "collectives match across ranks" "$out" || fail "collectives not checked"
grep -qE "^iteration time +[0-9]+\.[0-9]+ ms" "$out" || fail "no DLRM iteration time"
grep -q "^DLRM dlrm-param-8xv100: 8 GPUs" "$out" || fail "no DLRM workload line"

timeout 60 "$perfsim" shard "$configs/dlrm/dlrm-param-8xv100.json" --memory-cap-GB 0.5 \
  --topology "$configs/topologies/dgx1-v100.json" --device "$configs/devices/V100-SXM2.json" \
  >"$out" 2>&1
status=$?
cat "$out"
[ "$status" -eq 2 ] || fail "a cap no table fits under exited with $status, not 2"
grep -q "/tables/0: table 't0'" "$out" || fail "the error does not name the table"
echo "PASS"
