#!/usr/bin/env bash
# README's pandas example, run as written on a fresh results file: h5py and pandas from PyPI in
# a virtual environment under the build folder (kept between runs). The data frame must hold one
# row per simulated rank, and its slowest iteration must be the iteration time perfsim reports.
#   pandas_results.sh PERFSIM MPIEXEC SOURCE_DIR VENV_DIR
# Exit 77 (skipped) only when PyPI cannot be reached; every other failure fails.
set -euo pipefail
perfsim=$1 mpiexec=$2 source_dir=$3 venv=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import h5py, pandas" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check h5py pandas; then
    echo "pandas_results: cannot install h5py and pandas from PyPI (no network?): skipped"
    exit 77
  fi
fi

# The example between the README's pandas-example markers, unchanged.
awk '/<!-- pandas-example:begin -->/{on=1; next} /<!-- pandas-example:end -->/{on=0} on' \
  "$source_dir/README.md" | sed '/^```/d' > "$work/example.py"
[ -s "$work/example.py" ] || { echo "README has no pandas example"; exit 1; }

cd "$work"
"$mpiexec" -n 2 "$perfsim" simulate --model "$source_dir/configs/models/llama3-8b.json" \
  --topology "$source_dir/configs/topologies/hgx-h100.json" --device H100-SXM --tp 2 --pp 2 --dp 2 \
  --global-batch 8 --run-name default --format json > run.json
cat >> example.py <<'PY'

import json
units = {c: ranks[c].attrs.get("units", "") for c in df}  # every column says its unit
report = json.load(open("run.json"))
assert len(df) == 8, f"{len(df)} rows, expected one per rank (8)"
assert abs(df["iteration_us"].max() - report["iteration_us"]) <= 1e-6 * report["iteration_us"], \
    (df["iteration_us"].max(), report["iteration_us"])
print(df[["iteration_us", "gemm_us", "communication_us"]].describe().loc[["count", "max"]])
print("units of iteration_us:", units["iteration_us"])
PY
"$venv/bin/python" example.py
