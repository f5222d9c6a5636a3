#!/usr/bin/env bash
# The documented exit codes (README "Exit codes"): 0 ok, 2 bad input or command line (CLI
# parse errors too, printed once as `perfsim: error: ...`), 3 I/O or environment (an output
# that cannot be written fails before anything is simulated), alone and under mpirun.
source "$(dirname "$0")/fault_lib.sh"

# expect CODE DESCRIPTION -- COMMAND...: runs it, checks the code and a single error line.
expect() {
  local want="$1" what="$2"
  shift 3
  "$@" >out.txt 2>err.txt
  local status=$?
  echo "$what: exit $status ($(grep -m1 'perfsim: error' err.txt))"
  [ "$status" -eq "$want" ] || { cat out.txt err.txt; fail "$what: exit $status, want $want"; }
  if [ "$want" -ne 0 ]; then
    [ "$(grep -c '^perfsim: error: ' err.txt)" -eq 1 ] || { cat err.txt; fail "$what: not exactly one error line"; }
  fi
}

expect 2 "option of another command" -- "$perfsim" --results ""
expect 2 "unknown option" -- "$perfsim" simulate --bogus
expect 2 "missing subcommand" -- "$perfsim" sweep
expect 2 "not a number" -- "$perfsim" simulate --ranks abc
expect 2 "missing input file" -- "$perfsim" simulate --kineto "$work/absent.json" --results ""
grep -q "absent.json" err.txt || fail "the missing input is not named"
expect 0 "help" -- "$perfsim" --help
expect 0 "a small run" -- "$perfsim" simulate --ranks 2 --results "$work/ok.h5"
grep -q "^iteration time" out.txt || fail "a small run printed no iteration time"
expect 3 "results in a missing directory" -- "$perfsim" simulate --ranks 2 --results "$work/no/r.h5"
grep -q "^iteration time" out.txt && fail "simulated before failing on the output"
expect 3 "timeline in a missing directory" -- "$perfsim" simulate --ranks 2 --results "" --timeline "$work/no/t.json"
echo "not HDF5" >"$work/text.h5"
expect 2 "results file that is not HDF5" -- "$perfsim" simulate --ranks 2 --results "$work/text.h5"
grep -q "^iteration time" out.txt && fail "simulated before failing on the output"
expect 3 "results file that is a directory" -- "$perfsim" simulate --ranks 2 --results "$work"

# A model whose size is not positive, from a file or from `memory --llm` flags: rejected before
# generating, naming the field.
sed 's/"hidden": [0-9]*/"hidden": 0/' "$source_dir/configs/models/llama2-7b.json" >"$work/hidden0.json"
expect 2 "model file with hidden 0" -- "$perfsim" simulate --model "$work/hidden0.json" \
  --topology "$source_dir/configs/topologies/hgx-h100.json" \
  --device "$source_dir/configs/devices/H100-SXM.json" --results ""
grep -q "hidden0.json: hidden: must be a positive integer, got 0" err.txt || fail "hidden 0 not named"
expect 2 "generate from a model file with hidden 0" -- "$perfsim" generate --model "$work/hidden0.json" \
  --output "$work/traces"
grep -q "hidden: must be a positive integer, got 0" err.txt || fail "generate: hidden 0 not named"
expect 2 "memory --llm with --hidden 0" -- "$perfsim" memory --llm --layers 2 --hidden 0 --heads 4 \
  --seq 128 --vocab 1000
grep -q "hidden: must be positive, got 0" err.txt || fail "memory: hidden 0 not named"
# `memory --llm --model` takes shape flags over the file's values, as simulate does (--seq-len
# as simulate spells it): a shape the file's hidden size does not allow is named; twice the
# sequence is twice the activations of a layer (flash attention: linear in s).
expect 2 "memory --llm --model with --heads 7" -- "$perfsim" memory --llm \
  --model "$source_dir/configs/models/llama3-8b.json" --heads 7
grep -q "not divisible by heads 7" err.txt || fail "memory: --heads 7 over the model not named"
per_layer() {
  "$perfsim" memory --llm --model "$source_dir/configs/models/llama3-8b.json" --seq-len "$1" \
    --format json | grep -m1 '"activation_bytes_per_layer"' | tr -dc '0-9.'
}
awk -v a="$(per_layer 4096)" -v b="$(per_layer 8192)" 'BEGIN { exit !(a > 0 && b == 2 * a) }' ||
  fail "memory --llm --model --seq-len does not set the sequence"

expect 2 "unknown option under mpirun" -- "$mpiexec" -n 2 "$perfsim" simulate --bogus
expect 2 "missing input under mpirun" -- "$mpiexec" -n 2 "$perfsim" simulate --kineto "$work/absent.json"
expect 3 "missing output directory under mpirun" -- "$mpiexec" -n 2 "$perfsim" simulate --ranks 2 --results "$work/no/r.h5"
grep -q "^iteration time" out.txt && fail "simulated before failing on the output"
echo "PASS"
