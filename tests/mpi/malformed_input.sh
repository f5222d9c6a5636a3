#!/usr/bin/env bash
# A truncated Kineto trace given to `mpirun -n 4 perfsim simulate`: a non-zero exit within 10
# seconds and an error naming the file, on every process layout — never a hang.
set -u
perfsim="$1" mpiexec="$2" data="$4"
fail() { echo "FAIL: $*"; exit 1; }
for ranks_given in 1 4; do
  specs=("$data/mismatch/rank0.json" "$data/mismatch/rank1.json" "$data/malformed/kineto_truncated.json" "$data/mismatch/rank3.json")
  [ "$ranks_given" -eq 1 ] && specs=("$data/malformed/kineto_truncated.json")
  out="$(mktemp)"
  start=$(date +%s)
  timeout 60 "$mpiexec" -n 4 --oversubscribe "$perfsim" simulate --results "" \
    --kineto "${specs[@]}" >"$out" 2>&1
  status=$?
  elapsed=$(( $(date +%s) - start ))
  cat "$out"
  [ "$status" -ne 0 ] || fail "exit status 0 for a truncated trace"
  [ "$status" -ne 124 ] || fail "perfsim hung (killed by timeout)"
  [ "$elapsed" -le 10 ] || fail "took ${elapsed}s (limit 10s)"
  grep -qE "perfsim: error: .*kineto_truncated.json.*invalid JSON" "$out" ||
    fail "error does not name the file and the problem"
done
echo "PASS"
