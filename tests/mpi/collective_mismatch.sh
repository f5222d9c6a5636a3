#!/usr/bin/env bash
# Deliberately mismatched traces under `mpirun -n 4`: rank 2's second all-reduce moves 8192
# bytes where the others move 16384. perfsim must exit non-zero within 10 seconds with one
# message naming the rank, the group, the index and both sides — never hang.
set -u
perfsim="$1" mpiexec="$2" data="$4/mismatch"
out="$(mktemp)"
start=$(date +%s)
timeout 60 "$mpiexec" -n 4 --oversubscribe "$perfsim" simulate --results "" \
  --kineto "$data/rank0.json" "$data/rank1.json" "$data/rank2.json" "$data/rank3.json" >"$out" 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ "$status" -ne 0 ] || fail "exit status 0 for mismatched collectives"
[ "$status" -ne 124 ] || fail "perfsim hung (killed by timeout)"
[ "$elapsed" -le 10 ] || fail "took ${elapsed}s (limit 10s)"
expected="collective mismatch in process group 'world' at index 1: rank 0 runs all_reduce of 16384 bytes"
grep -qF "$expected" "$out" || fail "message missing: $expected"
grep -qF "but rank 2 runs all_reduce of 8192 bytes" "$out" || fail "other side not named"
[ "$(grep -c 'collective mismatch' "$out")" -eq 1 ] || fail "message not printed exactly once"
echo "PASS: exit $status after ${elapsed}s"
