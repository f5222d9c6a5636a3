#!/usr/bin/env bash
# Chakra protobuf traces end to end under `mpirun -n 2`: `generate --format chakra` writes
# perfsim.<rank>.et, `simulate --et` reads them (detected by content) to the same iteration
# time as the JSON traces and as simulating the generated workload directly; a truncated file
# is bad input (exit 2) naming file and byte. Built without protobuf, --format chakra exits 3.
set -u
perfsim="$1" mpiexec="$2"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

workload=(--model "$configs/models/llama3-8b.json" --tp 2 --pp 2 --dp 2 --global-batch 4)
machine=(--topology "$configs/topologies/hgx-h100.json" --device "$configs/devices/H100-SXM.json")

timeout 120 "$mpiexec" -n 2 --oversubscribe "$perfsim" generate "${workload[@]}" --format chakra \
  -o "$dir/et" >"$dir/generate.txt" 2>&1
status=$?
cat "$dir/generate.txt"
if [ "$status" -eq 3 ] && grep -q "built without protobuf" "$dir/generate.txt"; then
  echo "PASS (built without protobuf: --format chakra refused with exit 3)"
  exit 0
fi
[ "$status" -eq 0 ] || fail "generate --format chakra exited with $status"
for rank in 0 1 2 3 4 5 6 7; do
  [ -s "$dir/et/perfsim.$rank.et" ] || fail "no perfsim.$rank.et"
done
timeout 120 "$mpiexec" -n 2 --oversubscribe "$perfsim" generate "${workload[@]}" -o "$dir/json" \
  >/dev/null 2>&1 || fail "generate (JSON) failed"

simulate() {  # NAME ARGS...: the iteration time line of `simulate ARGS`
  local name="$1"
  shift
  timeout 200 "$mpiexec" -n 2 --oversubscribe "$perfsim" simulate "$@" "${machine[@]}" \
    --results "$dir/$name.h5" >"$dir/$name.txt" 2>&1 || fail "simulate $name: $(tail -3 "$dir/$name.txt")"
  grep "^iteration time" "$dir/$name.txt"
}
et_time="$(simulate et --et "$dir"/et/*.et --comm model)"
json_time="$(simulate json --et "$dir"/json/*.et.json --comm model)"
# Traces carry no host calibration: the direct run without it is the same workload.
direct_time="$(simulate direct "${workload[@]}" --assets "$configs/assets/collective_curves.h5" \
  --calibration none)"
echo "chakra: $et_time"
echo "json:   $json_time"
echo "direct: $direct_time"
[ -n "$et_time" ] || fail "no iteration time from the .et traces"
[ "$et_time" = "$json_time" ] || fail "Chakra and JSON traces simulate differently"
[ "$et_time" = "$direct_time" ] || fail "Chakra traces and the generated workload differ"

head -c 1000 "$dir/et/perfsim.3.et" >"$dir/cut.3.et"
timeout 60 "$perfsim" trace summary "$dir/cut.3.et" >"$dir/cut.txt" 2>&1
status=$?
cat "$dir/cut.txt"
[ "$status" -eq 2 ] || fail "a truncated .et exited with $status, not 2"
grep -q "perfsim: error: $dir/cut.3.et: byte [0-9]*: .*truncated" "$dir/cut.txt" ||
  fail "the error does not name file, byte and truncation"
echo "PASS"
