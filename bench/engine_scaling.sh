#!/usr/bin/env bash
# Engine speed on this machine: simulated ops per second per rank and wall time for the
# synthetic workload (each rank repeats: compute kernel, collective over its group).
#   bash bench/engine_scaling.sh [path/to/perfsim]
# Prints one row per configuration: MPI processes, simulated ranks, ranks per process,
# wall time of the whole mpirun (start-up included) and the simulator's own figures.
set -euo pipefail
cd "$(dirname "$0")/.."
perfsim="${1:-build/mpi_sim/perfsim}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1
ulimit -n 4096 2>/dev/null || true

printf "%-10s %-8s %-12s %-10s %-12s %-12s %-12s %s\n" processes ranks per_process mpirun_s simulate_s "ops/s" "ops/s/rank" workload
run() {
  local processes=$1 ranks=$2 group=$3 layout=$4 label=$5 packing=${6:-explicit} repetitions=${7:-20}
  local start end out
  # Explicit ranks per process keeps every process busy, measuring the distributed engine;
  # "auto" lets perfsim pack ranks onto as many processes as there are cores.
  local per_process=(--ranks-per-process $(( (ranks + processes - 1) / processes )))
  [[ $packing == auto ]] && per_process=()
  start=$(date +%s.%N)
  out=$(mpirun --oversubscribe -n "$processes" "$perfsim" simulate --results "" \
        --ranks "$ranks" --repetitions "$repetitions" --compute-us 200 --bytes 64000000 \
        --group-size "$group" --group-layout "$layout" "${per_process[@]}" 2>/dev/null)
  end=$(date +%s.%N)
  local line
  line=$(grep "^simulator: .* ops on" <<<"$out")
  local simulate_s ops_rate ops
  ops=$(sed -E 's/^simulator: ([0-9]+) ops.*/\1/' <<<"$line")
  simulate_s=$(sed -E 's/.* in ([0-9.]+) s wall.*/\1/' <<<"$line")
  ops_rate=$(awk "BEGIN{printf \"%.0f\", $ops / $simulate_s / $ranks}")
  printf "%-10s %-8s %-12s %-10.2f %-12s %-12.0f %-12s %s\n" "$processes" "$ranks" \
    "${per_process[1]:-auto}" "$(awk "BEGIN{print $end - $start}")" \
    "$simulate_s" "$(awk "BEGIN{print $ops / $simulate_s}")" "$ops_rate" "$label"
}
# Latency-bound: one rank per process, so every step waits for a cross-process reduction.
run 2 2 0 consecutive "20000 x (200 us compute, 64 MB all-reduce over the world)" explicit 20000
run 8 8 0 consecutive "20 x (200 us compute, 64 MB all-reduce over the world)"
run 64 64 8 consecutive "20 x (200 us compute, 64 MB all-reduce in groups of 8), packed" auto
run 64 64 8 consecutive "20 x (200 us compute, 64 MB all-reduce in groups of 8)"
run 8 1024 8 consecutive "20 x (200 us compute, 64 MB all-reduce in groups of 8)"
run 8 1024 0 consecutive "20 x (200 us compute, 64 MB all-reduce over all 1024)"
run 8 4096 64 strided "20 x (200 us compute, 64 MB all-reduce, strided groups of 64)"
run 16 4096 8 consecutive "20 x (200 us compute, 64 MB all-reduce in groups of 8)"
