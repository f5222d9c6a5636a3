#!/usr/bin/env bash
# Traces whose collectives wait on each other in a cycle (tests/data/cyclic): perfsim says so
# with exit 2 within seconds under every process layout, once, never hangs.
source "$(dirname "$0")/fault_lib.sh"
traces=("$source_dir"/tests/data/cyclic/rank{0,1,2,3}.json)

for layout in "1 4" "4 1" "2 2" "3 2"; do
  set -- $layout
  start=$(now_s)
  timeout 60 "$mpiexec" -n "$1" "$perfsim" simulate --results "" --ranks-per-process "$2" \
    --kineto "${traces[@]}" >out.txt 2>&1
  status=$?
  elapsed=$(seconds_since "$start")
  echo "mpirun -n $1 --ranks-per-process $2: exit $status after ${elapsed}s"
  [ "$status" -eq 2 ] || { cat out.txt; fail "exit $status, want 2"; }
  at_most "$elapsed" 15 || fail "took ${elapsed}s (limit 15 s)"
  [ "$(grep -c 'deadlock' out.txt)" -eq 1 ] || { cat out.txt; fail "deadlock not reported exactly once"; }
done
echo "PASS"
