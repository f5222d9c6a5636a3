#!/usr/bin/env bash
# Progress is for a person at a terminal (issue 19): under mpirun at a terminal (a pseudo-
# terminal from script(1)) process 0 shows it although Open MPI gives it a pipe; through a pipe,
# or with --quiet, nothing.
set -u
perfsim="$1" mpiexec="$2"
fail() {
  echo "FAIL: $*"
  for f in terminal.txt quiet.txt piped.txt; do [ -f "$f" ] && { echo "--- $f"; tail -c 2000 "$f"; }; done
  exit 1
}
command -v script >/dev/null || { echo "SKIP: no script(1) to make a terminal"; exit 0; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
# --progress-interval-ms 0 (for tests) makes a progress line due every 64 rank steps instead of
# every 0.5 s, so process 0's 2 x 2,000 steps print one however fast the machine simulates, and
# the quiet and piped checks below could fail if the suppression broke: nothing depends on time.
run=(simulate --ranks 4 --repetitions 2000 --progress-interval-ms 0)

script -qfec "$mpiexec -n 2 $perfsim ${run[*]} --results ''" terminal.txt >/dev/null 2>&1 ||
  fail "the run at a terminal failed: $(cat terminal.txt)"
grep -q "process 0: .* M ops" terminal.txt || fail "no progress under mpirun at a terminal"
grep -q "iteration time" terminal.txt || fail "no summary at a terminal"

script -qfec "$mpiexec -n 2 $perfsim ${run[*]} --results '' --quiet" quiet.txt >/dev/null 2>&1 ||
  fail "the quiet run failed"
! grep -q "M ops (" quiet.txt || fail "progress despite --quiet"

"$mpiexec" -n 2 "$perfsim" "${run[@]}" --results "" >piped.txt 2>&1 || fail "the piped run failed"
! grep -q "M ops (" piped.txt || fail "progress into a pipe"
grep -q "iteration time" piped.txt || fail "no summary through a pipe"
echo "PASS"
