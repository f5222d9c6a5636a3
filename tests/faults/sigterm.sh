#!/usr/bin/env bash
# SIGTERM while simulating, to mpirun and to a lone perfsim: the run ends within 10 s with a
# non-zero exit, the results file it was to add to keeps its earlier runs, and no partial
# file is left.
source "$(dirname "$0")/fault_lib.sh"

"$perfsim" simulate --ranks 2 --results "$work/kept.h5" --run-name earlier >/dev/null ||
  fail "the first run failed"
before="$(md5sum < kept.h5)"

# started_then_term PID OUTPUT LINE: waits until the run prints LINE, sends SIGTERM, waits.
started_then_term() {
  wait_for_line "$2" "$3"
  sleep 0.5
  start=$(now_s)
  kill -TERM "$1"
  wait "$1"
  status=$?
  elapsed=$(seconds_since "$start")
}

"$mpiexec" -n 4 "$perfsim" "${long_mpi_run[@]}" --results "$work/kept.h5" --run-name late >mpi.txt 2>&1 &
started_then_term $! mpi.txt "collectives match"
echo "mpirun: exit $status ${elapsed}s after SIGTERM"
[ "$status" -ne 0 ] || fail "mpirun exited 0 after SIGTERM"
at_most "$elapsed" 10 || fail "mpirun took ${elapsed}s to exit (limit 10 s)"

"$perfsim" "${long_lone_run[@]}" --results "$work/kept.h5" --run-name lone >lone.txt 2>&1 &
started_then_term $! lone.txt "simulating"
echo "perfsim: exit $status ${elapsed}s after SIGTERM"
[ "$status" -eq 143 ] || fail "perfsim exited $status after SIGTERM, want 143"
at_most "$elapsed" 10 || fail "perfsim took ${elapsed}s to exit (limit 10 s)"

[ "$(md5sum < kept.h5)" = "$before" ] || fail "the results file changed"
[ -z "$(find "$work" -name '.kept.h5.tmp.*')" ] || fail "a temporary results file was left"
echo "PASS"
