#!/usr/bin/env bash
# The sweep on a real Slurm: installs slurm-wlm and munge when missing, starts munged,
# slurmctld and slurmd for a one-node cluster on localhost from a slurm.conf in a temporary
# directory (its own ports, socket and state; /etc/slurm is not used), submits
# small-synthetic.json with `perfsim sweep submit` (job arrays of 2- and 4-process tasks and a
# dependent merge job), waits for the merge job with a bounded timeout, checks the merged
# table, and checks that `perfsim sweep run --all` without Slurm gives the same table. The
# daemons it started are stopped by PID on exit. When they cannot start, it says why and fails.
# Usage: sweep_slurm.sh PERFSIM SOURCE_DIR
set -euo pipefail
perfsim="$1"
source_dir="$2"
source "$source_dir/tests/sweep/sweep_test_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
readonly wait_limit_s=300

if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null ||
   ! command -v munged > /dev/null; then
  [ "$(id -u)" -eq 0 ] || fail "Slurm is not installed and this user cannot install it (not root)"
  echo "installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq slurm-wlm munge > /dev/null ||
    { apt-get update -qq && apt-get install -y -qq slurm-wlm munge > /dev/null; } ||
    fail "apt-get install slurm-wlm munge failed"
fi

dir="$(mktemp -d /tmp/perfsim-slurm-XXXXXX)"
chmod 0755 "$dir"  # the munge user must reach its own subdirectory
mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
started_pids=()
stop_daemons() {
  local status=$?
  if command -v scancel > /dev/null && [ -f "$dir/slurmctld.pid" ]; then
    scancel --quiet --user="$(id -un)" 2> /dev/null || true
  fi
  # Our daemons only, by the PIDs they wrote or we recorded.
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -s "$pid_file" ] && started_pids+=("$(cat "$pid_file")")
  done
  for pid in "${started_pids[@]}"; do
    kill "$pid" 2> /dev/null || true
  done
  for pid in "${started_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  done
  if [ "$status" -ne 0 ]; then
    for log in "$dir"/log/*.log "$dir"/munge/munged.log; do
      [ -f "$log" ] && { echo "--- tail of $log"; tail -n 30 "$log"; }
    done
  fi
  rm -rf "$dir"
  exit "$status"
}
trap stop_daemons EXIT

# munged of our own, on a socket in $dir, as the munge user (munged refuses root).
id munge > /dev/null 2>&1 || fail "no munge user (the munge package creates it)"
key="$dir/munge/munge.key"
if [ -r /etc/munge/munge.key ]; then
  cp /etc/munge/munge.key "$key"
else
  dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chown -R munge:munge "$dir/munge"
chmod 0755 "$dir/munge"  # munged: the socket directory must be searchable by all
chmod 0400 "$key"
socket="$dir/munge/munge.socket"
runuser -u munge -- munged --socket="$socket" --key-file="$key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" ||
  fail "munged did not start (exit $?); its log: $(cat "$dir/munge/munged.log" 2> /dev/null)"

port=$((20000 + RANDOM % 20000))
export SLURM_CONF="$dir/slurm.conf"
cat > "$SLURM_CONF" << CONF
ClusterName=perfsimtest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
NodeName=localhost CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start (exit $?)"
slurmd -N localhost -f "$SLURM_CONF" || fail "slurmd did not start (exit $?)"
state=""
for _ in $(seq 100); do
  state="$(sinfo -h -o %T 2> /dev/null || true)"
  [ "$state" = idle ] && break
  sleep 0.3
done
[ "$state" = idle ] ||
  fail "the one-node cluster did not come up: sinfo says '$state' after 30 s (daemon logs below)"
echo "slurm: node localhost idle (ports $port, $((port + 1)))"

work="$dir/work"
mkdir -p "$work"
cd "$work"
sweep="$source_dir/tests/sweep/small-synthetic.json"
"$perfsim" sweep submit "$sweep" --dir "$work/slurm-sweep" --max-parallel 2 --time 00:10:00 |
  tee submit.txt
grep -q "submitted job array .*: 2 tasks x 2 MPI processes" submit.txt || fail "no 2-process array"
grep -q "submitted job array .*: 4 tasks x 4 MPI processes" submit.txt || fail "no 4-process array"
merge_job="$(sed -n 's/^submitted merge job \([0-9]*\).*/\1/p' submit.txt)"
[ -n "$merge_job" ] || fail "no merge job id in the submit output"

elapsed=0
while squeue -h -o %i 2> /dev/null | grep -q .; do
  [ "$elapsed" -lt "$wait_limit_s" ] || {
    squeue
    fail "jobs still queued or running after $wait_limit_s s"
  }
  sleep 2
  elapsed=$((elapsed + 2))
done
echo "slurm: all jobs ended after about $elapsed s"
merge_state="$(scontrol -o show job "$merge_job" | sed -n 's/.*JobState=\([A-Z_]*\) .*ExitCode=\([0-9:]*\).*/\1 \2/p')"
cat "$work"/slurm-sweep/slurm/merge-"$merge_job".out || true
[ "$merge_state" = "COMPLETED 0:0" ] || {
  for out in "$work"/slurm-sweep/slurm/*.out; do echo "--- $out"; cat "$out"; done
  fail "merge job $merge_job: '$merge_state', want 'COMPLETED 0:0'"
}
"$perfsim" sweep status "$sweep" --dir "$work/slurm-sweep" | grep -q "6 done, 0 running, 0 failed" ||
  fail "status after the Slurm run"
check_small_synthetic_table "$work/slurm-sweep"
# Inside the allocation every task was launched with srun.
[ "$(cat "$work"/slurm-sweep/slurm/array-*.out | grep -c "^running 1 tasks with srun")" -eq 6 ] ||
  fail "not every array task ran its task with srun"

# wait_for_jobs: until the queue is empty, within the time limit.
wait_for_jobs() {
  local waited=0
  while squeue -h -o %i 2> /dev/null | grep -q .; do
    [ "$waited" -lt "$wait_limit_s" ] || { squeue; fail "jobs still queued after $wait_limit_s s"; }
    sleep 2
    waited=$((waited + 2))
  done
}

# A sweep with a failing task through the plain script slurm/submit-sweep: the merge job ends
# non-zero naming the task; `perfsim sweep submit --only-failed` sends that task alone again.
failing="$source_dir/tests/sweep/failing.json"
bash "$source_dir/slurm/submit-sweep" "$failing" --dir "$work/failing" --perfsim "$perfsim" \
  --max-parallel 2 --time 00:05:00 | tee submit-failing.txt
failing_merge="$(sed -n 's/^submitted merge job \([0-9]*\).*/\1/p' submit-failing.txt)"
[ -n "$failing_merge" ] || fail "slurm/submit-sweep printed no merge job"
wait_for_jobs
failing_state="$(scontrol -o show job "$failing_merge" | sed -n 's/.*JobState=\([A-Z_]*\) .*ExitCode=\([0-9:]*\).*/\1 \2/p')"
[ "$failing_state" = "FAILED 4:0" ] || fail "merge of the failing sweep: '$failing_state', want 'FAILED 4:0' (exit 4: incomplete)"
grep -q "^failed tasks (1): 1$" "$work/failing/slurm/merge-$failing_merge.out" ||
  fail "the merge job did not report task 1 failed"
"$perfsim" sweep submit "$failing" --dir "$work/failing" --only-failed | tee resubmit.txt
grep -q "submitted job array .*: 1 tasks x 1 MPI processes" resubmit.txt ||
  fail "--only-failed did not resubmit task 1 alone"
grep -q "^tasks=(1)$" "$work/failing/slurm/array-np1-0.sbatch" || fail "resubmitted array is not task 1"
resubmitted="$(sed -n 's/^submitted job array \([0-9]*\):.*/\1/p' resubmit.txt)"
wait_for_jobs
grep -q "^task 1: FAILED" "$work/failing/slurm/array-np1-0-${resubmitted}_0.out" ||
  fail "the resubmitted job $resubmitted did not run task 1 again"
"$perfsim" sweep status "$failing" --dir "$work/failing" | grep -q "2 done, 0 running, 1 failed" ||
  fail "status of the failing sweep after the resubmission"

# scancel of a running task (what a time limit does too): the runner gets SIGTERM and records
# the task as failed (exit 143), so --only-failed picks it up.
stalled="$source_dir/tests/sweep/stalled.json"
"$perfsim" sweep submit "$stalled" --dir "$work/stalled" --time 00:05:00 | tee submit-stalled.txt
stalled_job="$(sed -n 's/^submitted job array \([0-9]*\):.*/\1/p' submit-stalled.txt)"
for _ in $(seq 100); do
  "$perfsim" sweep status "$stalled" --dir "$work/stalled" | grep -q "1 running" && break
  sleep 0.3
done
"$perfsim" sweep status "$stalled" --dir "$work/stalled" | grep -q "1 running" ||
  fail "the stalled task never started"
scancel "$stalled_job"
wait_for_jobs
"$perfsim" sweep status "$stalled" --dir "$work/stalled" | grep -q "0 done, 0 running, 1 failed" ||
  fail "a cancelled task is not recorded as failed"
grep -q "^exit_status: 143$" "$work/stalled/results/task-000000.failed" ||
  fail "the cancelled task's record: $(cat "$work/stalled/results/task-000000.failed")"

# slurm/simulate-large.sbatch: 2,048 LLM ranks (a small GPT, TP 8 x PP 4 x DP 64 on 256 DGX
# A100 nodes), every rank simulated in 2 tasks of 1,024 ranks each; the results equal the
# folded run of one process bit for bit.
cat > "$work/tiny-gpt.json" << 'JSON'
{
  "schema": "perfsim-llm-model/1",
  "name": "tiny-gpt",
  "source": "a small GPT shape for the Slurm recipe test",
  "layers": 8, "hidden": 512, "heads": 8, "ffn_hidden": 2048, "vocab": 4096, "seq_len": 512,
  "micro_batch": 1, "global_batch": 256, "dtype": "bf16"
}
JSON
large=(--model "$work/tiny-gpt.json" --tp 8 --pp 4 --dp 64 --nodes 256
       --device A100-80GB --run-name large)
(cd "$source_dir" && PERFSIM_BINARY="$perfsim" sbatch --parsable --ntasks=2 --nodes=1 \
  --output="$work/large-%j.out" slurm/simulate-large.sbatch "${large[@]}" \
  --topology "$source_dir/configs/topologies/dgx-a100.json" --ranks-per-process 1024 \
  --results "$work/large-unfolded.h5") > large-job.txt || fail "sbatch slurm/simulate-large.sbatch"
large_job="$(cat large-job.txt)"
wait_for_jobs
cat "$work/large-$large_job.out"
large_state="$(scontrol -o show job "$large_job" | sed -n 's/.*JobState=\([A-Z_]*\) .*ExitCode=\([0-9:]*\).*/\1 \2/p')"
[ "$large_state" = "COMPLETED 0:0" ] || fail "simulate-large job $large_job: '$large_state'"
grep -q "simulating 2048 ranks on 2 MPI processes (1024 per process)" "$work/large-$large_job.out" ||
  fail "the job did not simulate 2,048 ranks in 2 processes"
! grep -q "^fold:" "$work/large-$large_job.out" || fail "the recipe folded the run"
"$perfsim" simulate "${large[@]}" --topology "$source_dir/configs/topologies/dgx-a100.json" \
  --results "$work/large-folded.h5" > large-folded.txt 2>&1 || fail "the folded run failed"
grep -q "^fold:" large-folded.txt || fail "the reference run did not fold"
h5diff "$work/large-unfolded.h5" "$work/large-folded.h5" ||
  fail "the unfolded 2,048-rank run differs from the folded one"

# Without Slurm, the same sweep gives the same table.
env -u SLURM_CONF "$perfsim" sweep run "$sweep" --dir "$work/local-sweep" --all --jobs 2 --launcher mpirun
"$perfsim" sweep merge "$sweep" --dir "$work/local-sweep" > /dev/null
diff "$work/slurm-sweep/merged.csv" "$work/local-sweep/merged.csv" ||
  fail "the Slurm and the local runs of the sweep differ"
echo "sweep_slurm: OK"
