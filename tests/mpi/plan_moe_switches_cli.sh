#!/usr/bin/env bash
# `perfsim plan` with the MoE switches (issue 15): --moe-token-dispatcher flex,
# --moe-a2a-overlap with --delay-wgrad-compute, --moe-shared-expert-overlap on a small MoE with a
# shared expert over 8 GPUs of one node. Every ranked layout states its switches (JSON fields and
# the table's layout names) and carries them where Megatron-Core allows them: the delayed weight
# gradients exactly with the all-to-all overlap, flex only with EP > 1 and expert TP 1, the
# shared experts' overlap only with EP > 1, alltoall and no all-to-all overlap; the best layout's
# summary says which it runs, and the simulate command plan prints for it carries them and
# predicts the same time; --delay-wgrad-compute alone is refused.
set -u
perfsim="$1"
configs="$(cd "$(dirname "$0")/../../configs" && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

cat > moe.json <<'JSON'
{
  "schema": "perfsim-llm-model/1",
  "name": "small-moe-shared",
  "layers": 2, "hidden": 1024, "heads": 16, "ffn_hidden": 4096, "gated_ffn": true,
  "vocab": 32768, "seq_len": 1024, "micro_batch": 1, "global_batch": 32, "dtype": "bf16",
  "num_experts": 8, "top_k": 2, "moe_ffn_hidden": 1024, "num_shared_experts": 1
}
JSON
plan=("$perfsim" plan moe.json --gpus 8 --topology "$configs/topologies/hgx-h100.json"
  --device H100-SXM --max-micro-batch 2 --max-virtual-stages 1 --max-cp 1 --quiet)
switches=(--moe-token-dispatcher flex --moe-flex-backend hybridep --moe-a2a-overlap
  --delay-wgrad-compute --moe-shared-expert-overlap)

# $1 the plan's JSON, $2 the switches some ranked layout must run (comma-separated).
check_ranking() {
/usr/bin/python3 - "$1" "$2" <<'PY' || fail "the ranked layouts' MoE switches ($1)"
import json, sys
top = json.load(open(sys.argv[1]))["top"]
assert top, "no ranked layout"
seen = set()
for row in top:
    name, flex = row["layout"], row["moe_token_dispatcher"] == "flex"
    a2a, delay, shared = row["moe_a2a_overlap"], row["delay_wgrad_compute"], row["moe_shared_expert_overlap"]
    assert delay == a2a, name
    assert not (shared and (a2a or flex)), name
    assert not shared or row["ep"] > 1, name
    assert not flex or (row["ep"] > 1 and row["etp"] == 1), name
    assert (row["moe_flex_backend"] == "hybridep") == flex, name
    for token, on in (("flex-hybridep", flex), ("a2a-ovl", a2a), ("wgrad-delay", delay), ("shared-ovl", shared)):
        assert (token in name.split()) == on, (name, token)
    seen.update(k for k, on in (("flex", flex), ("a2a", a2a), ("shared", shared)) if on)
    print(name, row["iteration_us"])
assert set(sys.argv[2].split(",")) <= seen, seen
PY
}
timeout 240 "${plan[@]}" "${switches[@]}" --top 8 --format json > plan.json ||
  fail "plan --format json with the MoE switches"
check_ranking plan.json flex,a2a
# Without the all-to-all overlap the shared experts' overlap runs (alltoall dispatcher).
timeout 240 "${plan[@]}" --moe-shared-expert-overlap --top 8 --format json > shared.json ||
  fail "plan --format json --moe-shared-expert-overlap"
check_ranking shared.json shared

timeout 240 "${plan[@]}" "${switches[@]}" --top 3 > plan.txt 2>&1 || { cat plan.txt; fail "plan"; }
cat plan.txt
best=$(sed -n '/^best layout:/,/^top /p' plan.txt)
layout=$(awk '$1 == "1" { print; exit }' plan.txt)
# The summary's overlaps line names what the table's first layout runs.
case "$layout" in *flex-hybridep*) grep -q "flex dispatcher (hybridep" <<< "$best" ||
  fail "best layout runs flex, its summary does not say so";; esac
case "$layout" in *a2a-ovl*) grep -q "EP all-to-alls overlapped" <<< "$best" ||
  fail "best layout overlaps its all-to-alls, its summary does not say so";; esac
case "$layout" in *wgrad-delay*) grep -q "weight gradients delayed" <<< "$best" ||
  fail "best layout delays its weight gradients, its summary does not say so";; esac

# The printed `perfsim simulate` command of the best layout, with every rank, predicts the plan's
# time (its switches included).
command=$(sed -n 's/^the best layout with every rank: perfsim simulate //p' plan.txt)
[ -n "$command" ] || fail "plan prints no simulate command for the best layout"
for token in $layout; do
  case "$token" in
    flex-hybridep) grep -q -- "--moe-token-dispatcher flex --moe-flex-backend hybridep" <<< "$command" ||
      fail "the simulate command lacks the flex dispatcher: $command";;
    a2a-ovl) grep -q -- "--moe-a2a-overlap" <<< "$command" || fail "no --moe-a2a-overlap: $command";;
    wgrad-delay) grep -q -- "--delay-wgrad-compute" <<< "$command" ||
      fail "no --delay-wgrad-compute: $command";;
  esac
done
# shellcheck disable=SC2086 # the printed command's words, none quoted
timeout 120 "$perfsim" simulate $command --results "" > simulate.txt 2>&1 ||
  { cat simulate.txt; fail "the printed simulate command failed"; }
plan_ms=$(sed -n 's/^iteration time *\([0-9.]*\) ms.*/\1/p' plan.txt)
simulate_ms=$(sed -n 's/^iteration time *\([0-9.]*\) ms.*/\1/p' simulate.txt)
[ -n "$plan_ms" ] && [ "$plan_ms" = "$simulate_ms" ] ||
  fail "plan's best layout $plan_ms ms, its simulate command $simulate_ms ms"

# Without the switches no layout states one.
timeout 240 "${plan[@]}" --top 3 > plain.txt 2>&1 || { cat plain.txt; fail "plan without switches"; }
grep -qE "flex-|a2a-ovl|wgrad-delay|shared-ovl" plain.txt && fail "a switch without its option"

if timeout 60 "${plan[@]}" --delay-wgrad-compute > refused.txt 2>&1; then
  fail "--delay-wgrad-compute without --moe-a2a-overlap was accepted"
fi
grep -q "needs --moe-a2a-overlap" refused.txt || { cat refused.txt; fail "no reason for the refusal"; }
echo "PASS"
