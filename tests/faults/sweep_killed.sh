#!/usr/bin/env bash
# A sweep runner killed with its whole process group (kill -9 of the group: the runner and
# the mpirun tasks it started), resumed with `sweep run --all`, merges exactly as an
# uninterrupted sweep does. The runner's parent does not reap it, as a batch system or a
# script that has not waited yet would not: the killed runner stays a zombie while the
# sweep resumes, and its tasks must still count as lost.
source "$(dirname "$0")/fault_lib.sh"
sweep="$source_dir/tests/sweep/small-synthetic.json"

"$perfsim" sweep run "$sweep" --dir "$work/whole" --all --jobs 2 >whole.txt ||
  fail "the uninterrupted sweep failed"
"$perfsim" sweep merge "$sweep" --dir "$work/whole" >/dev/null || fail "merge of the uninterrupted sweep"

# The runner in its own process group (setsid), child of a `sleep` that never reaps it.
sh -c 'setsid "$1" sweep run "$2" --dir "$3" --all --jobs 2 >"$3.txt" 2>&1 & echo $! >"$3.pid"; exec sleep 120' \
  sh "$perfsim" "$sweep" "$work/killed" &
parent=$!
for _ in $(seq 1 200); do
  [ -s "$work/killed.pid" ] && [ -n "$(find "$work/killed/results" -name '*.h5' 2>/dev/null)" ] &&
    [ -n "$(find "$work/killed/results" -name '*.running' 2>/dev/null)" ] && break
  sleep 0.05
done
runner="$(cat "$work/killed.pid")"
[ -n "$(find "$work/killed/results" -name '*.running')" ] || fail "no task was running to kill"
kill -9 -- "-$runner"
sleep 0.5
echo "killed process group $runner: $(ls "$work/killed/results" | tr '\n' ' ')"
state="$(process_state "$runner")"
echo "the killed runner's state: ${state:-gone}"
"$perfsim" sweep status "$sweep" --dir "$work/killed" | tee status.txt
grep -q " 0 running" status.txt || fail "tasks of the killed runner still count as running"

"$perfsim" sweep run "$sweep" --dir "$work/killed" --all --jobs 2 | tee resumed.txt ||
  fail "the resumed sweep failed"
kill "$parent" 2>/dev/null
"$perfsim" sweep merge "$sweep" --dir "$work/killed" >/dev/null || fail "merge of the resumed sweep"
diff "$work/whole/merged.csv" "$work/killed/merged.csv" ||
  fail "the resumed sweep's merged.csv differs from the uninterrupted one"
echo "PASS: merged tables identical"
