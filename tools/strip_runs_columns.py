#!/usr/bin/env python3
"""Write a copy of a RUNS.csv table that keeps only the columns issue 14 lists (the layout, the
model and the measurement): what a published run usually states. Every switch column (overlaps,
fusions, FP8 recipe, gradient dtype, host syncs, pipeline split, ETP, ...) is dropped, so
`perfsim validate runs` fills them with its defaults or the `--framework` preset.

usage: tools/strip_runs_columns.py IN.csv OUT.csv
"""
import csv
import io
import sys

KEPT = (
    "name group model layers hidden heads kv_heads ffn_hidden vocab seq_len gpus tp pp dp cp ep "
    "virtual_stages micro_batch global_batch recompute sequence_parallel dtype "
    "distributed_optimizer device topology nodes measured_iteration_s measured_tflops_per_gpu "
    "measured_tokens_per_s_per_gpu"
).split()


def main(source, target):
    with open(source, newline="") as handle:
        lines = [line for line in handle if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    if not rows:
        sys.exit(f"{source}: no rows")
    columns = [column for column in rows[0] if column in KEPT]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with open(target, "w") as handle:
        handle.write(f"# {source} with only the columns issue 14 lists (tools/strip_runs_columns.py)\n")
        handle.write(out.getvalue())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
