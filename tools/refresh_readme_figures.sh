#!/usr/bin/env bash
# Reprints the figures README.md quotes as "current main" that move with H100/H200 kernel physics
# or with the LLM generator's semantics (the default scenario, every generated H100 LLM and MoE
# run, the published H100 run tables), each on one line labelled with the README section it
# belongs to, so that a physics change can refresh them in one pass:
#
#   bash tools/refresh_readme_figures.sh [BUILD_DIR] [GROUP_REGEX]
#
# BUILD_DIR defaults to build (perfsim at BUILD_DIR/mpi_sim/perfsim; the FP8 speedup comes from
# BUILD_DIR/tests/golden_llm_fp8_speedup_test when it was built). GROUP_REGEX picks groups by
# name (default: all; `bash tools/refresh_readme_figures.sh build 'default|fp8'`); the groups are
# listed at the end of this file. Every run happens in a scratch directory under /tmp (perfsim
# simulate writes perfsim-results.h5 in the working directory), kept and named at the end.
#
# Left out on purpose: A100-only figures (vTrain and its 5-fold CV, which takes minutes;
# Korthikanti; Narayanan; GPT-3 on A100; DLRM on A100/V100): neither the H100 kernel classes nor
# the Megatron-Core fusions of gated/RoPE models move them. Wall times and ops/s figures of the
# engine sections are machine measurements, not predictions, and are not reprinted either.
# shellcheck disable=SC2317  # the group_* functions below are called by name
set -euo pipefail

# PERFSIM_REPO: the checkout whose configs/ and shared data to use (default: this script's), e.g.
# an older checkout with its own build, to see the figures before a change.
repo="${PERFSIM_REPO:-$(cd "$(dirname "$0")/.." && pwd)}"
build="$(cd "${1:-$repo/build}" && pwd)"
only="${2:-.}"
perfsim="$build/mpi_sim/perfsim"
[ -x "$perfsim" ] || { echo "no perfsim at $perfsim (build it first)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"

scratch="$(mktemp -d /tmp/refresh-figures.XXXXXX)"
cd "$scratch"
C="$repo/configs"
M="$C/models" T="$C/topologies" D="$C/devices"
h100=(--device "$D/H100-SXM.json")
node8=(--topology "$T/hgx-h100-8node.json")

# Reads one `simulate --format json` file and prints the fields asked for:
#   it (iteration ms), it_us (full precision), mean (mean over ranks, ms), tflops, mfu (%),
#   slow:KEY / mean:KEY (a breakdown line in ms: compute, exposed_tp, exposed_ep, exposed_p2p,
#   bubble, ...), slowpct:KEY / meanpct:KEY (its share of the iteration, %), mem (worst stage GiB),
#   spare (GiB), group:KIND (time summed over ranks, ms), ops (simulated ops).
cat >pick.py <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
it, mean = d["iteration_us"], d["mean_iteration_us"]
bd = {b["key"]: b for b in d["breakdown"]}
gib = 2.0 ** 30
out = []
for f in sys.argv[2:]:
    kind, _, key = f.partition(":")
    if f == "it": v = "%.2f ms" % (it / 1e3)
    elif f == "it_us": v = "%r us" % it
    elif f == "mean": v = "%.2f ms" % (mean / 1e3)
    elif f == "tflops": v = "%.1f TFLOP/s" % d["throughput"]["model_tflops_per_s_per_gpu"]
    elif f == "mfu": v = "%.1f %%" % (100 * d["throughput"]["mfu"])
    elif f == "mem": v = "%.2f GiB" % (max(s["total_bytes"] for s in d["memory"]["stages"]) / gib)
    elif f == "spare": v = "%.2f GiB" % (d["memory"]["margin_bytes"] / gib)
    elif f == "ops": v = "%d" % d["simulator"]["ops"]
    elif kind in ("slow", "mean", "slowpct", "meanpct"):
        b = bd.get(key)
        if b is None: v = "none"
        elif kind == "slow": v = "%.2f ms" % (b["slowest_rank_us"] / 1e3)
        elif kind == "mean": v = "%.2f ms" % (b["mean_us"] / 1e3)
        elif kind == "slowpct": v = "%.1f %%" % (100 * b["slowest_rank_us"] / it)
        else: v = "%.1f %%" % (100 * b["mean_us"] / mean)
    elif kind == "group":
        g = [g for g in d["group_kinds"] if g["kind"] == key]
        v = "%.3f ms" % (g[0]["time_us"] / 1e3) if g else "none"
    else: raise SystemExit("pick.py: unknown field " + f)
    out.append("%s=%s" % (f, v))
print("  ".join(out))
EOF

# Validation-table statistics over one or more `validate runs --format csv` files.
cat >runs.py <<'EOF'
import csv, statistics, sys
rows = sys.argv[1] == "--rows"
errs = []
for path in sys.argv[1 + rows:]:
    for row in csv.DictReader(open(path)):
        if row["skipped"] or not row["signed_error"]:
            print("    %s skipped: %s" % (row["name"], row["skipped"]))
            continue
        errs.append(float(row["signed_error"]))
        if rows:
            print("    %-36s measured %9.3f s  predicted %9.3f s  %+6.1f %%" % (
                row["name"], float(row["measured_s"]), float(row["predicted_s"]),
                100 * float(row["signed_error"])))
a = [abs(e) for e in errs]
print("runs=%d  mean abs %.2f %%  median abs %.2f %%  max abs %.2f %%  mean signed %+.1f %%" % (
    len(errs), 100 * statistics.mean(a), 100 * statistics.median(a), 100 * max(a),
    100 * statistics.mean(errs)))
EOF

# Kineto timelines: ProfilerStep#0 less the span of the kernel events, per file.
cat >span.py <<'EOF'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    ev = json.load(open(path))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    step = [e for e in ev if e.get("name") == "ProfilerStep#0"][0]
    k = [e for e in ev if e.get("cat") == "kernel"]
    span = max(e["ts"] + e["dur"] for e in k) - min(e["ts"] for e in k)
    print("  %s: ProfilerStep#0 %.1f ms, outside the kernel span %.1f ms" % (
        path.rsplit("/", 1)[1], step["dur"] / 1e3, (step["dur"] - span) / 1e3))
EOF

fail=0
# sim NAME ARGS...: `mpirun -n 2 perfsim simulate ARGS --format json` into NAME.json
# (launcher=() around a call: one process, in-process clock sync).
launcher=(mpirun -n 2)
sim() {
  local name="$1"
  shift
  if ! "${launcher[@]}" "$perfsim" simulate "$@" --results "" --format json >"$name.json" 2>"$name.err"; then
    echo "FAILED: $name (see $scratch/$name.err)"
    fail=1
    return 1
  fi
}
# fig LABEL NAME FIELD...: one labelled line from NAME.json.
fig() {
  local label="$1" name="$2"
  shift 2
  if [ -s "$name.json" ]; then
    printf '%-100s %s\n' "$label" "$(python3 pick.py "$name.json" "$@")"
  else
    printf '%-100s %s\n' "$label" "missing ($name failed)"
  fi
}
section() { printf '\n== %s\n' "$*"; }
want() { [[ "$1" =~ $only ]]; }

llama70=(--model "$M/llama3-70b.json" --tp 8 --pp 4 --dp 2 --micro-batch 1 --global-batch 128
  --sequence-parallel --zero 1 "${node8[@]}" "${h100[@]}")
mixtral=(--model "$M/mixtral-8x7b.json" --tp 2 --pp 4 --dp 8 --ep 8 --sequence-parallel
  --distributed-optimizer "${node8[@]}" "${h100[@]}" --ranks-per-process 32)
deepseek=(--model "$M/deepseek-v2-lite.json" --tp 2 --cp 2 --pp 1 --dp 16 --ep 8
  --sequence-parallel --distributed-optimizer "${node8[@]}" "${h100[@]}" --ranks-per-process 32)
stages="7$(printf ',8%.0s' $(seq 14)),7"  # 126 layers on 16 stages, as Llama 3 trained

group_default() {
  section "default scenario (README: 'Output', 'The default scenario and Korthikanti', 'Long context'," \
    "'Megatron semantics', 'Pipeline scatter/gather', engine sections' current-main values)"
  mpirun -n 2 "$perfsim" >default.txt 2>&1 || { echo "FAILED: default (see $scratch/default.txt)"; fail=1; }
  grep -E '^iteration time|^throughput|exposed tensor-parallel|exposed pipeline p2p|pipeline bubble|^memory per GPU|^  stage 0|^simulator:' \
    default.txt | sed 's/^/  mpirun -n 2 perfsim | /'
  sim default_model "${llama70[@]}" &&
    fig "default layout via simulate --model (= mpirun -n 2 perfsim)" default_model it mean mfu ops
  sim default_fold_none "${llama70[@]}" --fold none &&
    fig "default, --fold none (engine sections: 'folded and with --fold none')" default_fold_none it
  sim default_calnone "${llama70[@]}" --calibration none &&
    fig "default with --calibration none ('The default scenario')" default_calnone it
  sim default_getbatch "${llama70[@]}" --get-batch-sync &&
    fig "default with --get-batch-sync ('Long context': 'either way')" default_getbatch it
}

group_fp8() {
  section "GPT-3 175B FP8/BF16 on 32 H100 (README: 'The default scenario' FP8 paragraph," \
    "'Gradient dtype' memory, 'Hopper GEMMs' last line)"
  local test="$build/tests/golden_llm_fp8_speedup_test"
  if [ -x "$test" ]; then
    "$test" 2>&1 | grep 'GPT-3 175B' | sed 's/^/  golden_llm_fp8_speedup_test | /'
  else
    echo "  skipped: $test not built (cmake --build $build --target golden_llm_fp8_speedup_test)"
  fi
}

group_published() {
  section "Published runs (README: 'Validating against measured runs', current-main rows)"
  local f
  for f in published-nemo-24.07-h100 published-megatron-bridge-h100 published-dev-dgxc-h100; do
    if "$perfsim" validate runs "$C/validation/$f.csv" --format csv >"$f.csv" 2>"$f.err"; then
      printf '  %-40s %s\n' "$f" "$(python3 runs.py "$f.csv" | tail -1)"
      python3 runs.py --rows "$f.csv" | sed '$d'
    else
      echo "FAILED: validate runs $f"
      fail=1
    fi
  done
  printf '  %-40s %s\n' "both held-out files (NeMo + Megatron-Bridge)" \
    "$(python3 runs.py published-nemo-24.07-h100.csv published-megatron-bridge-h100.csv | tail -1)"
}

group_traces() {
  section "ResNet-50 ET on H100 (README: 'CNN kernels' under 'Validating against measured runs')"
  if mpirun -n 1 "$perfsim" simulate --et "$repo/../shared/data/traces/param-resnet-2gpu/resnet_2gpu_et.json.gz" \
    --single-rank 1 "${h100[@]}" --topology "$T/hgx-h100.json" --results "" >resnet.txt 2>&1; then
    grep '^iteration time' resnet.txt | sed 's/^/  /'
  else
    echo "FAILED: resnet"
    fail=1
  fi
  section "Generated traces read back (README: 'Generated traces as execution-trace JSON' and" \
    "'Chakra protobuf traces', tests/mpi/chakra_cli.sh's figure there)"
  local gen=(--model "$M/llama3-8b.json" --tp 2 --pp 2 --dp 2 --global-batch 8 --sequence-parallel)
  local read=(--comm model --topology "$T/hgx-h100.json" "${h100[@]}")
  if "$perfsim" generate "${gen[@]}" -o traces >/dev/null 2>&1 &&
    "$perfsim" generate "${gen[@]}" --format chakra -o traces-et >/dev/null 2>&1; then
    sim et_json --et traces/*.et.json "${read[@]}" && fig "JSON execution traces" et_json it
    sim et_chakra --et traces-et/*.et "${read[@]}" && fig "Chakra .et traces" et_chakra it
  else
    echo "FAILED: generate"
    fail=1
  fi
  sim et_direct "${gen[@]}" --topology "$T/hgx-h100.json" "${h100[@]}" \
    --assets "$C/assets/collective_curves.h5" --calibration none &&
    fig "the same through simulate --model --calibration none" et_direct it
  sim chakra_cli --model "$M/llama3-8b.json" --tp 2 --pp 2 --dp 2 --global-batch 4 \
    --topology "$T/hgx-h100.json" "${h100[@]}" --assets "$C/assets/collective_curves.h5" \
    --calibration none && fig "tests/mpi/chakra_cli.sh workload (global batch 4)" chakra_cli it
}

group_longcontext() {
  section "Llama 3 405B (README: 'Long context' table, current-main column; time error =" \
    "measured / predicted TFLOP/s - 1)"
  local common=(--tp 8 --pp 16 --sequence-parallel --zero 1 --pp-layers "$stages" "${node8[@]}" "${h100[@]}")
  local row name measured args
  for row in "l405_8k_8192|430|--model $M/llama3-405b.json --dp 64 --nodes 1024" \
    "l405_8k_16384|400|--model $M/llama3-405b.json --dp 128 --nodes 2048" \
    "l405_128k|380|--model $M/llama3-405b-128k.json --cp 16 --dp 8 --nodes 2048"; do
    IFS='|' read -r name measured args <<<"$row"
    # shellcheck disable=SC2086
    sim "$name" $args "${common[@]}" || continue
    fig "$name (measured $measured TFLOP/s)" "$name" it mfu tflops
    python3 -c "import json; t=json.load(open('$name.json'))['throughput']['model_tflops_per_s_per_gpu']; print('  %s time error %+.1f %%' % ('$name', 100 * ($measured / t - 1)))"
  done
  section "Llama 3 405B CP16 at 8K, bench/scale.sh llama405b-folded (README: 'Long context' last" \
    "paragraph, 'Stage templates')"
  local l405=(--model "$M/llama3-405b.json" --tp 8 --cp 16 --pp 16 --pp-layers "$stages"
    --topology "$T/hgx-h100.json" "${h100[@]}" --dp 8 --nodes 2048)
  sim l405_folded "${l405[@]}" && fig "llama405b-folded (256 micro-batches)" l405_folded it mfu slow:compute
  sim l405_folded_calnone "${l405[@]}" --calibration none &&
    fig "llama405b-folded --calibration none" l405_folded_calnone it mfu
  [ -s l405_folded.json ] && python3 -c "import json; d=json.load(open('l405_folded.json')); c=[b for b in d['breakdown'] if b['key']=='compute'][0]['slowest_rank_us']; print('  compute kernels per micro-batch (slowest rank / 256): %.1f ms' % (c / 256e3))"
}

group_moe() {
  section "Mixtral 8x7B, 64 H100 (README: 'Mixture of experts', 'Megatron semantics', 'Gradient dtype')"
  sim mixtral "${mixtral[@]}" && fig "Mixtral TP2 PP4 DP8 EP8" mixtral it mfu slow:exposed_ep slowpct:exposed_ep mem
  sim mixtral_calnone "${mixtral[@]}" --calibration none && fig "Mixtral --calibration none" mixtral_calnone it mfu
  sim mixtral_imb "${mixtral[@]}" --moe-imbalance 1.5 && fig "Mixtral --moe-imbalance 1.5" mixtral_imb it mfu
  sim mixtral_fp8 "${mixtral[@]}" --dtype fp8 && fig "Mixtral --dtype fp8" mixtral_fp8 it mem
  [ -s mixtral.json ] && [ -s mixtral_fp8.json ] && python3 -c "import json; a=json.load(open('mixtral.json'))['iteration_us']; b=json.load(open('mixtral_fp8.json'))['iteration_us']; print('  Mixtral bf16 / fp8: %.2fx' % (a / b))"
  sim mixtral_etp1 "${mixtral[@]}" --etp 1 && fig "Mixtral --etp 1" mixtral_etp1 it mfu slow:exposed_ep mem
  if "$perfsim" memory --llm --model "$M/mixtral-8x7b.json" --tp 2 --pp 4 --dp 8 --ep 8 --sequence-parallel \
    --zero 1 "${h100[@]}" >mixtral_memory.txt 2>&1; then
    grep -m1 '^  worst stage' mixtral_memory.txt | sed 's/^/  memory --llm Mixtral (Gradient dtype) | /'
  else
    echo "FAILED: memory --llm mixtral"
    fail=1
  fi
  section "DeepSeek-V2-Lite TP2 CP2 DP16 EP8, 64 H100 (README: 'Megatron semantics')"
  sim deepseek "${deepseek[@]}" && fig "DeepSeek-V2-Lite ETP = TP" deepseek it slow:exposed_ep
  sim deepseek_etp1 "${deepseek[@]}" --etp 1 && fig "DeepSeek-V2-Lite --etp 1" deepseek_etp1 it slow:exposed_ep
}

group_order() {
  section "Llama 3 8B TP2 PP4 DP2, 2 nodes (README: 'Rank order')"
  local args=(--model "$M/llama3-8b.json" --tp 2 --pp 4 --dp 2 --global-batch 16
    --topology "$T/hgx-h100-2node.json" "${h100[@]}")
  sim order_tppp "${args[@]}" --order tp-cp-ep-pp-dp &&
    fig "--order tp-cp-ep-pp-dp" order_tppp it group:dp group:p2p
  sim order_default "${args[@]}" && fig "default order" order_default it group:dp group:p2p
}

group_tpoverlap() {
  section "Llama 3 70B TP overlap table (README: 'Overlapped TP communication'; slowest rank)"
  local f=(it slow:exposed_tp slow:exposed_p2p slow:compute)
  sim tpo_1f1b "${llama70[@]}" && fig "1F1B (the default scenario)" tpo_1f1b "${f[@]}"
  sim tpo_1f1b_ub "${llama70[@]}" --tp-comm-overlap && fig "1F1B, --tp-comm-overlap (also 'Megatron semantics')" tpo_1f1b_ub "${f[@]}" mem
  sim tpo_v2_nop2p "${llama70[@]}" --virtual-stages 2 --no-overlap-p2p-comm &&
    fig "2 virtual stages, --no-overlap-p2p-comm" tpo_v2_nop2p "${f[@]}"
  sim tpo_v2 "${llama70[@]}" --virtual-stages 2 && fig "2 virtual stages" tpo_v2 "${f[@]}"
  sim tpo_v2_ub "${llama70[@]}" --virtual-stages 2 --tp-comm-overlap &&
    fig "2 virtual stages, --tp-comm-overlap" tpo_v2_ub "${f[@]}"
}

group_hbm() {
  section "HBM sharing table (README: 'Overlapped communication takes HBM bandwidth'; SM only / SMs + HBM)"
  local l8=(--model "$M/llama3-8b.json" --tp 1 --pp 1 --dp 8 --micro-batch 1 --global-batch 32 --zero 1
    --topology "$T/hgx-h100.json" "${h100[@]}" --overlap-grad-reduce --overlap-param-gather)
  local cp=(--model "$M/llama3-8b.json" --tp 2 --cp 2 --dp 2 --global-batch 16 --sequence-parallel
    --zero 1 --tp-overlap --topology "$T/hgx-h100.json" "${h100[@]}")
  local row name
  for row in l8 ub ubdp cp default; do
    case "$row" in
      l8) set -- "${l8[@]}" ;;
      ub) set -- "${llama70[@]}" --tp-comm-overlap ;;
      ubdp) set -- "${llama70[@]}" --tp-comm-overlap --overlap-grad-reduce --overlap-param-gather ;;
      cp) set -- "${cp[@]}" ;;
      default) set -- "${llama70[@]}" ;;
    esac
    sim "hbm_${row}_sm" "$@" --no-comm-hbm-sharing
    sim "hbm_${row}_hbm" "$@"
    fig "$row: SM contention only" "hbm_${row}_sm" it
    fig "$row: SMs + HBM" "hbm_${row}_hbm" it
  done
  launcher=()
  sim hbm_l8_inprocess "${l8[@]}" && fig "l8: SMs + HBM, in-process (one process, no mpirun)" hbm_l8_inprocess it
  launcher=(mpirun -n 2)
}

group_links() {
  section "Link sharing, Llama 3 70B (README: 'Concurrent collectives share links'; off / on)"
  local base=(--model "$M/llama3-70b.json" --micro-batch 1 --sequence-parallel --zero 1 "${node8[@]}" "${h100[@]}")
  local row i=0
  for row in "--tp 8 --pp 4 --dp 2 --global-batch 128" \
    "--tp 8 --pp 4 --dp 2 --global-batch 128 --overlap-grad-reduce" \
    "--tp 8 --pp 4 --dp 2 --global-batch 128 --overlap-grad-reduce --virtual-stages 5" \
    "--tp 4 --cp 2 --pp 4 --dp 2 --global-batch 128 --overlap-grad-reduce" \
    "--tp 8 --pp 4 --dp 8 --global-batch 256 --overlap-grad-reduce --nodes 32"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    sim "ls${i}_off" "${base[@]}" $row --link-sharing off
    # shellcheck disable=SC2086
    sim "ls${i}_on" "${base[@]}" $row
    fig "row $i off: $row" "ls${i}_off" it slow:exposed_p2p
    fig "row $i on:  $row" "ls${i}_on" it slow:exposed_p2p
  done
  section "GPUs sharing one NIC, Llama 3 8B (README: 'Link sharing in DLRM and trace runs'; 8 NICs / 4 NICs, off / on)"
  local l8=(--model "$M/llama3-8b.json" --micro-batch 1 "${h100[@]}")
  i=0
  for row in "--tp 2 --dp 8 --global-batch 64 --zero 1" \
    "--tp 2 --dp 8 --global-batch 64 --zero 1 --overlap-grad-reduce" \
    "--tp 8 --pp 2 --global-batch 64"; do
    i=$((i + 1))
    local topo sharing
    for topo in hgx-h100-2node hgx-h100-4nic-2node; do
      for sharing in off on; do
        # shellcheck disable=SC2086
        sim "nic${i}_${topo}_${sharing}" "${l8[@]}" --topology "$T/$topo.json" $row --link-sharing "$sharing"
        fig "row $i $topo $sharing: $row" "nic${i}_${topo}_${sharing}" it it_us
      done
    done
  done
  section "16-GPU DLRM on H100 (README: 'Link sharing in DLRM and trace runs': 2 node / 4 NIC)"
  local topo
  for topo in hgx-h100-2node hgx-h100-4nic-2node; do
    if mpirun -n 2 "$perfsim" simulate --dlrm "$C/dlrm/dlrm-heavy-4gpu.json" --dlrm-ranks 16 "${h100[@]}" \
      --topology "$T/$topo.json" --results "" >"dlrm_$topo.txt" 2>&1; then
      grep '^iteration time' "dlrm_$topo.txt" | sed "s/^/  $topo | /"
    else
      echo "FAILED: dlrm $topo"
      fail=1
    fi
  done
}

group_spine() {
  section "Leaf/spine, DeepSeek-V2-Lite on 16 nodes (README: 'Leaf/spine oversubscription';" \
    "iteration and exposed EP of the slowest rank)"
  local base=(--model "$M/deepseek-v2-lite.json" "${h100[@]}")
  local row i=0 col
  for row in "--tp 1 --dp 128 --ep 64" "--tp 1 --dp 128 --ep 32" "--tp 8 --dp 16 --ep 16 --sequence-parallel"; do
    i=$((i + 1))
    for col in "1to1|--topology $T/hgx-h100-8node.json --nodes 16" \
      "tor|--topology $T/hgx-h100-16node-tor-2to1.json" \
      "tor_off|--topology $T/hgx-h100-16node-tor-2to1.json --link-sharing off" \
      "rail|--topology $T/hgx-h100-16node-rail-2to1.json"; do
      # shellcheck disable=SC2086
      sim "spine${i}_${col%%|*}" "${base[@]}" $row ${col#*|}
      fig "$row | ${col%%|*}" "spine${i}_${col%%|*}" it slow:exposed_ep slow:exposed_edp
    done
  done
}

group_timeline() {
  section "Kineto timelines, Llama 3 8B TP2 PP2 DP2 (README: 'Timelines'; iteration and time outside the kernel span)"
  if mpirun -n 2 "$perfsim" simulate --model "$M/llama3-8b.json" --topology "$T/hgx-h100.json" \
    --device H100-SXM --tp 2 --pp 2 --dp 2 --global-batch 8 --results "" --timeline kineto \
    --timeline-format kineto >timeline.txt 2>&1; then
    grep '^iteration time' timeline.txt | sed 's/^/  /'
    python3 span.py kineto
  else
    echo "FAILED: timeline"
    fail=1
  fi
}

echo "perfsim: $perfsim ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')); scratch: $scratch"
for group in default fp8 published traces longcontext moe order tpoverlap hbm links spine timeline; do
  if want "$group"; then
    start=$SECONDS
    "group_$group"
    echo "  ($group: $((SECONDS - start)) s)"
  fi
done
echo
echo "raw outputs: $scratch"
exit "$fail"
