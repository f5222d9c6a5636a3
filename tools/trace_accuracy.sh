#!/usr/bin/env bash
# Per-trace accuracy of perfsim on the profiled runs under ../shared/data/traces (or $1): every
# Kineto trace set with measured ProfilerStep times is replayed with measured durations and
# predicted with kernel and collective models, and the error against the measured step ends
# is printed, one line per trace set and mode. Downloads nothing; reads only local files.
#
#   tools/trace_accuracy.sh [TRACES_DIR] [PERFSIM_BINARY]
#
# Execution traces (no timing) are listed as "no measured step". The topology for the models
# is picked from the GPU the trace names (V100 -> dgx1-v100, A100 -> dgx-a100, H100 ->
# hgx-h100); a trace naming another GPU gets the measured replay only.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
traces_dir="${1:-$here/../shared/data/traces}"
perfsim="${2:-$here/build/mpi_sim/perfsim}"
[[ -x "$perfsim" ]] || { echo "no perfsim binary at $perfsim (build it first)" >&2; exit 2; }
[[ -d "$traces_dir" ]] || { echo "no traces directory $traces_dir" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

topology_for() {  # GPU name -> topology file, or nothing
  case "$1" in
    *V100*) echo "$here/configs/topologies/dgx1-v100.json" ;;
    *A100*) echo "$here/configs/topologies/dgx-a100.json" ;;
    *H100*) echo "$here/configs/topologies/hgx-h100.json" ;;
  esac
}

# One line from perfsim's validation table: synchronized error and mean/worst per-rank error.
summarize() {
  awk '/^ +[0-9]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+%$/ {
         e = $5; sub("%", "", e); e = e + 0; e = e < 0 ? -e : e; n++; sum += e; if (e > worst) worst = e }
       /^synchronized iteration/ { match($0, /error [-+][0-9.]+%/); sync = substr($0, RSTART + 6, RLENGTH - 6) }
       END { if (n == 0) print "no measured step"; else
             printf "synchronized %s, mean |rank| %.2f%%, worst rank %.2f%% (%d ranks)\n", sync, sum / n, worst, n }' "$1"
}

gpu_of() {  # the first GPU name in the raw trace bytes
  case "$1" in
    *.gz) gzip -dc "$1" | grep -aom1 'V100\|A100\|H100' || true ;;
    *) grep -aom1 'V100\|A100\|H100' "$1" || true ;;
  esac
}

# Trace sets: every archive, and every folder's *.json / *.json.gz files together (one file
# per rank, as the profiler writes them).
list_sets() {
  find "$traces_dir" -name '*.tar.gz' -print0 | sort -z
  find "$traces_dir" \( -name '*.json' -o -name '*.json.gz' \) -printf '%h\0' | sort -zu
}

printf '%-45s %-9s %s\n' "trace set" "mode" "error against the measured step ends"
while IFS= read -r -d '' set; do
  name="${set#"$traces_dir"/}"
  if [[ -d "$set" ]]; then
    mapfile -t inputs < <(find "$set" -maxdepth 1 \( -name '*.json' -o -name '*.json.gz' \) | sort)
    name="$name/ (${#inputs[@]} files)"
  else
    inputs=("$set")
  fi
  # mpirun reads stdin: keep it off the set list.
  if ! "$perfsim" simulate --kineto "${inputs[@]}" --results "" </dev/null >"$work/probe.txt" 2>&1; then
    printf '%-45s %-9s %s\n' "$name" "-" "skipped: $(grep -m1 'error' "$work/probe.txt" | sed 's/.*: //' | cut -c1-70)"
    continue
  fi
  ranks="$(sed -n 's/^perfsim: simulating \([0-9]*\) ranks.*/\1/p' "$work/probe.txt")"
  processes=$(( ${ranks:-1} < 2 ? 1 : 2 ))
  run() { mpirun --oversubscribe -n "$processes" "$perfsim" simulate --kineto "${inputs[@]}" --results "" "$@" </dev/null; }
  if run >"$work/measured.txt" 2>&1; then
    printf '%-45s %-9s %s\n' "$name" measured "$(summarize "$work/measured.txt")"
  else
    printf '%-45s %-9s %s\n' "$name" measured "failed: $(tail -1 "$work/measured.txt")"
  fi
  gpu="$(gpu_of "${inputs[0]}")"
  topology="$(topology_for "$gpu")"
  if [[ -z "$topology" ]]; then
    printf '%-45s %-9s %s\n' "$name" model "skipped: no topology for the GPU the trace names"
  elif run --durations model --comm model --topology "$topology" >"$work/model.txt" 2>&1; then
    printf '%-45s %-9s %s\n' "$name" model "$(summarize "$work/model.txt") [$(basename "$topology")]"
  else
    printf '%-45s %-9s %s\n' "$name" model "failed: $(tail -1 "$work/model.txt")"
  fi
done < <(list_sets)
