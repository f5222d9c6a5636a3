#!/usr/bin/env bash
# kill -9 of one perfsim process under mpirun while it simulates: mpirun ends the job within
# 10 s with a non-zero exit, and no results file (nor a temporary of it) is left.
source "$(dirname "$0")/fault_lib.sh"

"$mpiexec" -n 4 "$perfsim" "${long_mpi_run[@]}" --results "$work/killed.h5" >run.txt 2>&1 &
launcher=$!
wait_for_line run.txt "collectives match"
sleep 0.5
victim="$(children_of "$launcher" | sort -n | sed -n 2p)"
[ -n "$victim" ] || fail "no perfsim process under mpirun $launcher"
start=$(now_s)
kill -9 "$victim"
wait "$launcher"
status=$?
elapsed=$(seconds_since "$start")
tail -n 5 run.txt
echo "mpirun exited $status ${elapsed}s after kill -9 of pid $victim"
[ "$status" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
at_most "$elapsed" 10 || fail "mpirun took ${elapsed}s to exit (limit 10 s)"
no_partial_files "$work" killed.h5
echo "PASS"
