#!/usr/bin/env bash
# The sweep without Slurm: plan, `sweep run --all --jobs 2`, status, merge; the merged table of
# small-synthetic.json is checked, one task is compared with a direct `perfsim simulate`, and a
# sweep with a failing task is merged with the failure reported by index and re-planned with
# `submit --only-failed --dry-run`.
# Usage: sweep_local.sh PERFSIM SOURCE_DIR
set -euo pipefail
perfsim="$1"
source_dir="$2"
source "$source_dir/tests/sweep/sweep_test_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1

work="$(mktemp -d /tmp/perfsim-sweep-local-XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
sweep="$source_dir/tests/sweep/small-synthetic.json"

"$perfsim" sweep plan "$sweep" --dir "$work/small" | tee plan.txt
grep -q "^6 tasks$" plan.txt || fail "plan did not print '6 tasks'"
[ "$(tail -n +2 small/tasks.csv | wc -l)" -eq 6 ] || fail "tasks.csv does not hold 6 tasks"

"$perfsim" sweep status "$sweep" --dir "$work/small" | tee status.txt
grep -q "0 done, 0 running, 0 failed, 0 lost, 6 pending" status.txt || fail "status before run"

"$perfsim" sweep run "$sweep" --dir "$work/small" --all --jobs 2 | tee run.txt
grep -q "^6 tasks run, 0 failed" run.txt || fail "run --all did not run 6 tasks cleanly"

"$perfsim" sweep status "$sweep" --dir "$work/small" | tee status.txt
grep -q "6 done, 0 running, 0 failed, 0 lost, 0 pending" status.txt || fail "status after run"

"$perfsim" sweep merge "$sweep" --dir "$work/small" | tee merge.txt
check_small_synthetic_table "$work/small"

# --format csv prints merged.csv; --format json (schema perfsim-sweep/1) the same cells.
"$perfsim" sweep merge "$sweep" --dir "$work/small" --format csv > merge.csv
cmp merge.csv small/merged.csv || fail "merge --format csv differs from merged.csv"
"$perfsim" sweep merge "$sweep" --dir "$work/small" --format json > merge.json
python3 - merge.json small/merged.csv <<'PY' || fail "merge --format json disagrees with merged.csv"
import csv, json, math, sys
merged = json.load(open(sys.argv[1]))
assert merged["schema"] == "perfsim-sweep/1", merged["schema"]
assert merged["tasks"] == 6 and merged["missing_tasks"] == [] and merged["failed_tasks"] == []
table = list(csv.DictReader(open(sys.argv[2])))
assert [c["name"] for c in merged["columns"]] == list(table[0].keys())
assert len(merged["rows"]) == len(table) == 6
types = {c["name"]: c["type"] for c in merged["columns"]}
assert types["iteration_us"] == "number" and types["task"] == "integer", types
for row, line in zip(merged["rows"], table):
    for name, text in line.items():
        value = row[name]
        if value is None:
            assert text == "", (name, text)
        elif types[name] == "string":
            assert value == text, (name, value, text)
        else:  # the CSV holds 12 significant digits
            assert math.isclose(value, float(text), rel_tol=1e-11, abs_tol=1e-9), (name, value, text)
print("merge --format json: 6 rows agree with merged.csv")
PY

# Task 5 run by hand gives the iteration time the merged table holds.
args="$(awk -F, 'NR == 7 {print $NF}' small/tasks.csv)"
eval "mpirun --oversubscribe -n 4 \"$perfsim\" simulate $args --results direct.h5 --format json" > direct.json
direct="$(sed -n 's/^  "iteration_us": \([0-9.e+-]*\),$/\1/p' direct.json)"
merged="$(awk -F, 'NR == 7 {print $9}' small/merged.csv)"
awk -v a="$direct" -v b="$merged" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.05 + 1e-9 * b) }' ||
  fail "task 5: direct simulate $direct us, merged $merged us"

# A second `run --all` skips what is done.
"$perfsim" sweep run "$sweep" --dir "$work/small" --all | tee rerun.txt
grep -q "skipping 6 tasks already done" rerun.txt || fail "run --all reran done tasks"

# A failing task: reported by index, with its exit status and stderr, merge exits 4.
failing="$source_dir/tests/sweep/failing.json"
set +e
"$perfsim" sweep run "$failing" --dir "$work/failing" --all > failing-run.txt
run_status=$?
"$perfsim" sweep merge "$failing" --dir "$work/failing" > failing-merge.txt
merge_status=$?
set -e
cat failing-run.txt failing-merge.txt
[ "$run_status" -eq 4 ] || fail "run --all with a failing task exited $run_status, want 4"
[ "$merge_status" -eq 4 ] || fail "merge of an incomplete sweep exited $merge_status, want 4"
grep -q "^failed tasks (1): 1$" failing-merge.txt || fail "merge did not report task 1 failed"
grep -q "no-such-model.json" failing-merge.txt || fail "merge did not show the failing stderr"
awk -F, 'NR == 3 && $2 == "failed" && $NF != "" {ok = 1} END {exit !ok}' failing/merged.csv ||
  fail "failing/merged.csv row 1 is not a failed row with its error"
set +e
"$perfsim" sweep merge "$failing" --dir "$work/failing" --format json > failing-merge.json
json_status=$?
set -e
[ "$json_status" -eq 4 ] || fail "merge --format json of an incomplete sweep exited $json_status"
python3 -c 'import json, sys; f = json.load(open(sys.argv[1]))["failed_tasks"]
assert [t["task"] for t in f] == [1] and "no-such-model.json" in f[0]["stderr_tail"], f' \
  failing-merge.json || fail "merge --format json did not list task 1 as failed"
"$perfsim" sweep status "$failing" --dir "$work/failing" | grep -q "2 done, 0 running, 1 failed" ||
  fail "status of the failing sweep"
"$perfsim" sweep submit "$failing" --dir "$work/failing" --only-failed --dry-run
grep -q "^tasks=(1)$" failing/slurm/array-np1-0.sbatch || fail "--only-failed did not select task 1 alone"
echo "sweep_local: OK"
