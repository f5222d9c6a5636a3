#!/usr/bin/env bash
# Several runs adding to one results file at once all keep their result (they take turns
# under the file's lock); a run finding the lock held waits for it, then writes.
source "$(dirname "$0")/fault_lib.sh"

pids=()
for writer in 1 2 3 4; do
  "$perfsim" simulate --ranks 16 --results "$work/shared.h5" --run-name "w$writer" \
    >"w$writer.txt" 2>&1 &
  pids+=($!)
done
"$mpiexec" -n 2 "$perfsim" simulate --ranks 16 --results "$work/shared.h5" --run-name mpi \
  >mpi.txt 2>&1 &
pids+=($!)
for pid in "${pids[@]}"; do
  wait "$pid" || { cat w*.txt mpi.txt; fail "a concurrent writer failed"; }
done
runs="$(h5ls "$work/shared.h5/runs" | awk '{print $1}' | tr '\n' ' ')"
echo "runs in shared.h5: $runs"
[ "$runs" = "mpi w1 w2 w3 w4 " ] || fail "runs in the file: '$runs', want all five"

# The lock held by someone else for 3 s: the run waits, then adds its result.
flock "$work/shared.h5.lock" sleep 3 &
holder=$!
sleep 0.5
start=$(now_s)
"$perfsim" simulate --ranks 2 --results "$work/shared.h5" --run-name waited >waited.txt 2>&1 ||
  fail "the run behind a held lock failed"
waited=$(seconds_since "$start")
wait "$holder"
echo "a run behind a lock held 3 s finished after ${waited}s"
at_most 2 "$waited" || fail "the run did not wait for the lock (${waited}s)"
h5ls "$work/shared.h5/runs/waited" >/dev/null || fail "the waiting run's result is missing"
echo "PASS"
