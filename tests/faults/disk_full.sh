#!/usr/bin/env bash
# A full disk while writing results, a timeline or the report: exit 3 with the file and "No space left on
# device" named (no crash), the earlier results file unchanged, no partial file. On a small
# tmpfs where this user may mount one; /dev/full always.
source "$(dirname "$0")/fault_lib.sh"

# expect_full COMMAND...: exit 3 and the ENOSPC message.
expect_full() {
  "$@" >out.txt 2>err.txt
  local status=$?
  echo "$*: exit $status: $(grep -m1 'perfsim: error' err.txt)"
  [ "$status" -eq 3 ] || { cat err.txt; fail "exit $status on a full disk, want 3"; }
  grep -q "No space left on device" err.txt || fail "ENOSPC not reported"
}

expect_full "$perfsim" simulate --ranks 8 --results /dev/full
expect_full "$perfsim" simulate --ranks 8 --results "" --timeline /dev/full
expect_full "$mpiexec" -n 2 "$perfsim" simulate --ranks 8 --results /dev/full
# The report itself to a full disk: not exit 0.
"$perfsim" simulate --ranks 8 --results "" >/dev/full 2>err.txt
status=$?
echo "report to /dev/full: exit $status: $(grep -m1 'perfsim: error' err.txt)"
[ "$status" -eq 3 ] || fail "exit $status when the report cannot be written, want 3"
grep -q "standard output: cannot write: No space left on device" err.txt || fail "not reported"

if try_mount_tmpfs "$work/small" size=48k; then
  # One small run fits; a second, bigger one does not.
  "$perfsim" simulate --ranks 2 --results "$work/small/r.h5" --run-name fits >/dev/null ||
    fail "the first run did not fit in 48 KiB"
  before="$(md5sum < small/r.h5)"
  expect_full "$perfsim" simulate --ranks 256 --results "$work/small/r.h5" --run-name big
  [ "$(md5sum < small/r.h5)" = "$before" ] || fail "the earlier results file changed"
  expect_full "$perfsim" simulate --ranks 256 --results "" --timeline "$work/small/t.json"
  no_partial_files "$work/small" t.json
  [ -z "$(find small -name '.r.h5.tmp.*')" ] || fail "a temporary results file was left"
else
  echo "cannot mount a tmpfs here: /dev/full only"
fi
echo "PASS"
