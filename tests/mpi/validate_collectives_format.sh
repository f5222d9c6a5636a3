#!/usr/bin/env bash
# `validate collectives --format text|csv|json` (issue 19): the three forms carry the same
# errors (csv and json as fractions, text in percent), json names its schema, and
# --leave-one-out is machine-readable too.
set -u
perfsim="$1" shared="$3"
source_dir="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

"$perfsim" import nccl-tests "$shared"/nccl-tests/h100-ib400-*node-allreduce.txt -o bench.h5 \
  >import.txt 2>&1 || fail "import: $(cat import.txt)"
validate=(validate collectives --bench bench.h5
          --assets "$source_dir/configs/assets/collective_curves.h5"
          --tables h100-ib400-2node-allreduce)
"$perfsim" "${validate[@]}" >text.txt || fail "text"
"$perfsim" "${validate[@]}" --format csv >table.csv || fail "csv"
"$perfsim" "${validate[@]}" --format json >table.json || fail "json"
cat text.txt table.csv
python3 - <<'PY' || fail "the three forms disagree"
import csv, json
doc = json.load(open("table.json"))
assert doc["schema"] == "perfsim-validate-collectives/1", doc["schema"]
assert doc["mode"] == "curves" and doc["topology"] is None
(table,) = doc["tables"]
assert table["name"] == "h100-ib400-2node-allreduce"
rows = {r["region"]: r for r in csv.DictReader(open("table.csv"))}
assert set(rows) == {"all", "latency", "sigmoid", "bandwidth"}, rows.keys()
for region, row in rows.items():
    assert int(row["points"]) == table[region]["points"]
    assert abs(float(row["gmae"]) - table[region]["gmae"]) < 1e-8
assert sum(table[r]["points"] for r in ("latency", "sigmoid", "bandwidth")) == table["all"]["points"]
text = open("text.txt").read().splitlines()
cells = text[2].split("|")[1].split()
assert int(cells[0]) == table["all"]["points"], cells
assert abs(float(cells[1].rstrip("%")) - 100 * table["all"]["gmae"]) < 0.006, cells
PY

"$perfsim" validate collectives --bench bench.h5 --leave-one-out \
  --topology "$source_dir/configs/topologies/hgx-h100-8node.json" --format json >loo.json ||
  fail "leave-one-out json"
python3 -c 'import json; d = json.load(open("loo.json")); assert d["mode"] == "leave_one_out" and d["tables"], d' ||
  fail "leave-one-out json: $(head -c 400 loo.json)"
# --points: one row per measured point (the points the summaries count), each with its own
# relative error.
"$perfsim" "${validate[@]}" --format json --points points.csv >points.json || fail "--points"
python3 - <<'PY' || fail "--points rows disagree with the summary"
import csv, json
rows = list(csv.DictReader(open("points.csv")))
(table,) = json.load(open("points.json"))["tables"]
assert len(rows) == table["all"]["points"], (len(rows), table["all"]["points"])
assert {r["table"] for r in rows} == {"h100-ib400-2node-allreduce"}
for r in rows:
    measured, predicted = float(r["measured_us"]), float(r["predicted_us"])
    assert abs(float(r["relative_error"]) - (predicted - measured) / measured) < 1e-6, r
PY
# An unwritable --points path is an I/O failure (exit 3) named before anything is predicted.
status=0
"$perfsim" "${validate[@]}" --points /nonexistent-dir/points.csv >/dev/null 2>err.txt || status=$?
[ "$status" = 3 ] || fail "--points into a missing directory: exit $status, want 3"
grep -q "nonexistent-dir" err.txt || fail "--points error does not name the file: $(cat err.txt)"
echo "PASS"
