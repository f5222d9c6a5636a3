#!/usr/bin/env bash
# A read-only output directory: exit 3 naming the file, before anything is simulated, alone and
# under mpirun. Read-only by a read-only tmpfs where this user may mount one, else by
# permissions (which root ignores: then the test is skipped).
source "$(dirname "$0")/fault_lib.sh"

if ! try_mount_tmpfs "$work/ro" size=1m,ro; then
  [ "$(id -u)" -ne 0 ] || { echo "SKIP: root without mount"; exit 77; }
  mkdir -p ro && chmod 555 ro
fi

for launcher in "" "$mpiexec -n 2"; do
  start=$(now_s)
  $launcher "$perfsim" simulate --ranks 4 --results "$work/ro/r.h5" >out.txt 2>err.txt
  status=$?
  echo "${launcher:-alone}: exit $status in $(seconds_since "$start")s: $(grep -m1 'perfsim: error' err.txt)"
  [ "$status" -eq 3 ] || { cat err.txt; fail "exit $status for a read-only directory, want 3"; }
  grep -q "ro/r.h5" err.txt || fail "the file is not named"
  grep -q "^iteration time" out.txt && fail "simulated before failing on the output"
done
echo "PASS"
