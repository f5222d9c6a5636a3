#!/usr/bin/env bash
# Scale benchmarks of issue 16 on this machine (`mpirun -n 2`): for each case the wall time of
# the whole run, the simulated ops, ops/s, the peak RSS summed over the MPI processes and the
# bytes per op at that peak: folded runs, that RSS over the ops their representatives' programs
# hold; unfolded runs, over the ops simulated (every rank's; the ranks of a pipeline stage
# share one compiled list of ops, so fewer distinct ops are held). cpu_s is the largest CPU
# time (user + system) of one process: on a loaded machine the wall time is mostly waiting.
# B/op net: the same, less what the same processes hold running a 2-rank synthetic workload
# on a topology (the binary, MPI, a topology and the collective curves: measured first, about
# 29 MB per process), so
# that a case with few ops is not judged by the fixed cost of starting perfsim. The last lines
# give the median of both over the cases run: issue 16's target is <= 100 B/op.
# ops/s/core: simulated ops over the CPU seconds of the simulation phase summed over the MPI
# processes (perfsim's "simulation CPU" line: from the start of the run to its report, every
# process, waiting included; a process that waits in a quiet barrier uses almost none); where
# perfsim prints no such line (--single-rank), sim_s x processes, marked "~". sim_cpu_s is that
# sum. ops/s is ops over sim_s for the whole job (all processes together). ">=2M" is issue 16's
# throughput target (>= 2 M simulated ops per second per core on the default scenario).
#   bash bench/scale.sh [path/to/perfsim] [case ...]
# Cases: synthetic-1k synthetic-64k default default-unfolded gpt3-folded gpt3-unfolded gpt3-unfolded-256
#        llama405b-folded llama405b-rank (default: all). Each process is capped with `ulimit -v` (CAP_GB, default
# 5 GB per process) so that a case that does not fit fails instead of swapping the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
perfsim="${1:-build/mpi_sim/perfsim}"
shift || true
cases=("$@")
[[ ${#cases[@]} -eq 0 ]] && cases=(synthetic-1k synthetic-64k default default-unfolded gpt3-folded gpt3-unfolded-256 gpt3-unfolded llama405b-folded llama405b-rank)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
cap_kb=$(( ${CAP_GB:-5} * 1024 * 1024 ))
timeout_s=${TIMEOUT_S:-900}
log_dir=$(mktemp -d)

measure_idle_rss() {
  local out="$log_dir/idle.txt"
  # time appends one line per process to its own file: on the shared standard error the two
  # processes' lines can interleave mid-line.
  mpirun -n 2 /usr/bin/time -a -o "$out.rss" -f "peak_rss_kB %M" "$perfsim" simulate --results "" \
    --ranks 2 --repetitions 1 --topology configs/topologies/dgx-a100.json >"$out" 2>&1
  idle_kb_per_process=$(awk '/^peak_rss_kB/{s+=$2; n++} END{if(n>0) printf "%.0f", s/n; else print 0}' "$out.rss")
}
measure_idle_rss
printf "idle process: %.1f MB (peak RSS of a 2-rank run on a topology, mean of 2 processes)\n" \
  "$(awk "BEGIN{print $idle_kb_per_process / 1024}")"
row_format="%-20s %8s %8s %8s %10s %12s %12s %12s %5s %10s %9s %9s %s\n"
printf "$row_format" case wall_s cpu_s sim_s sim_cpu_s ops "ops/s" "ops/s/core" ">=2M" rss_MB "B/op" \
  "B/op_net" note
bytes_per_op=()
net_bytes_per_op=()
run() {
  local name=$1 processes=$2
  shift 2
  local out="$log_dir/$name.txt" start end
  start=$(date +%s.%N)
  (ulimit -v "$cap_kb"; timeout "$timeout_s" mpirun -n "$processes" \
     /usr/bin/time -a -o "$out.rss" -f "peak_rss_kB %M cpu_s %U %S" "$perfsim" "$@") >"$out" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  local wall cpu ops sim_s sim_cpu rss held note
  wall=$(awk "BEGIN{printf \"%.2f\", $end - $start}")
  ops=$(sed -nE 's/^(simulated|simulator:) ([0-9]+) ops.*/\2/p' "$out" | head -1)
  sim_s=$(sed -nE 's/^(simulated|simulator:) .* in ([0-9.]+) s wall.*/\2/p' "$out" | head -1)
  sim_cpu=$(sed -nE 's/^perfsim: simulation CPU ([0-9.]+) s summed.*/\1/p' "$out" | head -1)
  rss=$(awk '/^peak_rss_kB/{s+=$2} END{printf "%.0f", s/1024}' "$out.rss")
  cpu=$(awk '/^peak_rss_kB/{c=$4+$5; if(c>m)m=c} END{printf "%.2f", m}' "$out.rss")
  held=$(sed -nE 's/.*fold: .*\(([0-9]+) ops held\).*/\1/p' "$out" | head -1)
  note=$(sed -nE 's/^perfsim: fold: ([0-9]+ representatives.*)/fold: \1/p' "$out" | head -1)
  if [[ $rc -ne 0 || -z $ops ]]; then
    note="FAILED rc=$rc: $(grep -m1 -iE "error|killed|bad_alloc|memory" "$out" | cut -c1-120)"
    printf "$row_format" "$name" "$wall" "$cpu" - - - - - - "$rss" - - "$note"
    return
  fi
  [[ -z $held ]] && held=$ops
  local rss_kb per_op net_per_op
  rss_kb=$(awk '/^peak_rss_kB/{s+=$2} END{print s}' "$out.rss")
  per_op=$(awk "BEGIN{printf \"%.0f\", $rss_kb * 1024 / $held}")
  net_per_op=$(awk "BEGIN{n = ($rss_kb - $processes * $idle_kb_per_process) * 1024 / $held; \
    printf \"%.0f\", n < 0 ? 0 : n}")
  bytes_per_op+=("$per_op")
  net_bytes_per_op+=("$net_per_op")
  [[ -z $sim_cpu ]] && sim_cpu="~$(awk "BEGIN{printf \"%.3f\", $sim_s * $processes}")"
  local per_core verdict
  per_core=$(awk "BEGIN{printf \"%.0f\", $ops / ${sim_cpu#\~}}")
  verdict=$(awk "BEGIN{print ($per_core >= 2000000) ? \"yes\" : \"no\"}")
  printf "$row_format" "$name" "$wall" "$cpu" "$sim_s" "$sim_cpu" "$ops" \
    "$(awk "BEGIN{printf \"%.0f\", $ops / $sim_s}")" "$per_core" "$verdict" "$rss" "$per_op" \
    "$net_per_op" "$note"
}
median() {
  printf "%s\n" "$@" | sort -n | awk '{v[NR]=$1} END{if(NR==0) print "-"; else if(NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}

gpt3=(simulate --results "" --model configs/models/gpt3-175b.json --tp 8 --pp 16 --dp 8
      --virtual-stages 2 --micro-batch 1 --topology configs/topologies/dgx-a100.json --nodes 128
      --device configs/devices/A100-80GB.json)
stages="7$(printf ',8%.0s' $(seq 14)),7"  # 126 layers on 16 stages, as Llama 3 trained
llama=(simulate --results "" --model configs/models/llama3-405b.json --tp 8 --cp 16 --pp 16
       --pp-layers "$stages" --topology configs/topologies/hgx-h100.json
       --device configs/devices/H100-SXM.json)
synthetic=(simulate --results "" --repetitions 20 --compute-us 200 --bytes 64000000
           --topology configs/topologies/dgx-a100.json)
for name in "${cases[@]}"; do
  case $name in
    synthetic-1k) run "$name" 2 "${synthetic[@]}" --ranks 1024 --nodes 128 ;;
    # 64 copies of the 1k case: all-reduces over groups of 1024 ranks on 128 nodes each (a
    # 65,536-member world group is out of reach: building each rank's program copies and sorts
    # the 65,536-member list for every collective; the collective check no longer gathers).
    synthetic-64k) run "$name" 2 "${synthetic[@]}" --ranks 65536 --nodes 8192 --group-size 1024 ;;
    default) run "$name" 2 ;;
    # The same scenario from the files it embeds, every rank simulated.
    default-unfolded) run "$name" 2 simulate --results "" --model configs/models/llama3-70b.json \
      --tp 8 --pp 4 --dp 2 --sequence-parallel --zero 1 --micro-batch 1 --global-batch 128 \
      --topology configs/topologies/hgx-h100-8node.json --device configs/devices/H100-SXM.json \
      --fold none ;;
    gpt3-folded) run "$name" 2 "${gpt3[@]}" --global-batch 1536 ;;
    gpt3-unfolded) run "$name" 2 "${gpt3[@]}" --global-batch 1536 --fold none ;;
    # 1/6 of the batch: measures the unfolded engine's bytes/op and ops/s at a size that fits.
    gpt3-unfolded-256) run "$name" 2 "${gpt3[@]}" --global-batch 256 --fold none ;;
    # One rank of the 16,384-GPU layout at its real batch (256 micro-batches per pipeline): the
    # ops every rank holds, to size a folded or unfolded run of all of them.
    # The whole 16,384-GPU layout at its real batch (2048 sequences of 8192: 16 M tokens), folded.
    llama405b-folded) run "$name" 2 "${llama[@]}" --dp 8 --nodes 2048 ;;
    llama405b-rank) run "$name" 1 "${llama[@]}" --dp 1 --nodes 256 --global-batch 256 --single-rank 8 ;;
    *) echo "unknown case $name" >&2 ;;
  esac
done
echo "median B/op over ${#bytes_per_op[@]} cases: $(median "${bytes_per_op[@]}") (net of the idle process: $(median "${net_bytes_per_op[@]}")); target <= 100"
echo "logs: $log_dir"
