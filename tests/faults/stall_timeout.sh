#!/usr/bin/env bash
# A process stopped outside perfsim (SIGSTOP) while the other waits on it in MPI_Waitsome, which
# has no timeout of its own: `--stall-timeout-s 2` still ends the job with a non-zero exit and the
# stall named, within 15 s, instead of a hang (mpi_sim/mpi/stall_alarm.hpp).
source "$(dirname "$0")/fault_lib.sh"

"$mpiexec" -n 2 "$perfsim" simulate --ranks 2 --repetitions 400000 --ranks-per-process 1 \
  --stall-timeout-s 2 --results "" >run.txt 2>&1 &
launcher=$!
wait_for_line run.txt "collectives match"
sleep 0.5
victim="$(children_of "$launcher" | sort -n | sed -n 2p)"
[ -n "$victim" ] || fail "no perfsim process under mpirun $launcher"
start=$(now_s)
kill -STOP "$victim"
( sleep 30; kill -CONT "$victim" 2>/dev/null ) &
resumer=$!
wait "$launcher"
status=$?
elapsed=$(seconds_since "$start")
kill -CONT "$victim" 2>/dev/null
kill "$resumer" 2>/dev/null
tail -n 5 run.txt
echo "mpirun exited $status ${elapsed}s after SIGSTOP of pid $victim"
[ "$status" -ne 0 ] || fail "mpirun exited 0 although a process stopped"
at_most "$elapsed" 15 || fail "mpirun took ${elapsed}s to exit (limit 15 s)"
grep -q "no collective completed for 2 s" run.txt || fail "the stall is not named"
echo "PASS"
