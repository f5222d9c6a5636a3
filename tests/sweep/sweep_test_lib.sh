# Shared by the sweep tests (sourced): failure reporting and the checks on the merged table of
# small-synthetic.json.

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# check_small_synthetic_table SWEEP_DIR: the six tasks of small-synthetic.json, all done, with
# the right process counts and figures that respond to the swept compute time.
check_small_synthetic_table() {
  local csv="$1/merged.csv" h5="$1/merged.h5"
  [ -f "$csv" ] || fail "no $csv"
  [ -f "$h5" ] || fail "no $h5"
  local header
  header="$(head -n 1 "$csv")"
  case "$header" in
    task,state,mpi_processes,simulated_ranks,ranks,group-size,group-layout,compute-us,iteration_us,*) ;;
    *) fail "unexpected merged header: $header" ;;
  esac
  for column in exposed_comm_us comm_time_us gemm_us stream7_busy_us exposed_world_us exit_status error; do
    echo "$header" | tr ',' '\n' | grep -qx "$column" || fail "no column $column in $header"
  done
  [ "$(tail -n +2 "$csv" | wc -l)" -eq 6 ] || fail "expected 6 rows in $csv"
  # task,state,processes,ranks: the cases are the slow digit, compute-us the fast one.
  local expected="0,done,2,2 1,done,2,2 2,done,4,4 3,done,4,4 4,done,4,4 5,done,4,4"
  local actual
  actual="$(tail -n +2 "$csv" | cut -d, -f1-4 | tr '\n' ' ' | sed 's/ $//')"
  [ "$actual" = "$expected" ] || fail "tasks/states/processes: got '$actual', want '$expected'"
  # Every task took time; 400 us of compute per repetition takes longer than 100 us (5 reps).
  awk -F, 'NR > 1 {
      if ($9 + 0 <= 0) { print "task " $1 ": iteration_us " $9; bad = 1 }
      it[$1] = $9 + 0
    }
    END {
      for (t = 0; t < 6; t += 2)
        if (it[t + 1] - it[t] < 5 * 300 - 1e-6) { print "task " t + 1 " vs " t ": " it[t + 1] " - " it[t] " < 1500"; bad = 1 }
      exit bad
    }' "$csv" || fail "iteration times in $csv do not follow the swept compute time"
  h5ls "$h5/sweep/tasks" | grep -q "^iteration_us *Dataset {6" ||
    fail "$h5 has no /sweep/tasks/iteration_us of 6 rows"
}
