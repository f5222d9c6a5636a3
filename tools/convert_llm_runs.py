#!/usr/bin/env python3
"""Convert the measured LLM run tables in ../shared/data/llm into perfsim's RUNS.csv schema
(`perfsim validate runs`, README "Validating against measured runs").

    python3 tools/convert_llm_runs.py [SHARED_DATA_DIR] [OUT_DIR]

defaults: ../shared/data and configs/validation. Standard library only. The facts each row
carries (hardware, attention kind, recomputation, vocabulary) come from the source tables'
header comments, repeated in configs/validation/README.md.
"""
import csv
import os
import sys

COLUMNS = [
    "name", "group", "model", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
    "seq_len", "attention", "dropout", "gpus", "tp", "pp", "dp", "cp", "ep", "virtual_stages",
    "micro_batch", "global_batch", "recompute", "sequence_parallel", "dtype",
    "distributed_optimizer", "get_batch_sync", "device", "topology", "nodes",
    "measured_iteration_s",
]
# Korthikanti's table also says that Megatron-LM's timers synchronized the device around each
# forward and backward step (configs/validation/README.md, "Timer syncs"); vTrain's path is
# unknown, so its table keeps the default and has no such column.
# It also says what Megatron-LM 2022 did at stage boundaries: no overlap_p2p_comm (batched
# exchanges, then a synchronize, as in Narayanan 2021) and the scatter/gather of the boundary
# tensor over TP when sequence parallelism is off (on by default in megatron/p2p_communication.py).
KORTHIKANTI_COLUMNS = (COLUMNS[:COLUMNS.index("get_batch_sync") + 1] +
                       ["timer_syncs", "overlap_p2p_comm", "p2p_scatter_gather"] +
                       COLUMNS[COLUMNS.index("get_batch_sync") + 1:])


def data_rows(path):
    with open(path, newline="") as handle:
        lines = [line for line in handle if not line.startswith("#")]
    return list(csv.reader(lines))


def blank_row(columns=COLUMNS):
    return {column: "" for column in columns}


def convert_vtrain(source):
    # Header: GPUs, global batch, micro batch, hidden size, attention heads, # layers,
    # sequence length, tensor parallelism, data parallelism, pipeline parallelism,
    # iteration time (ms). GPT (vocab 50257, FFN 4h), Megatron-DeepSpeed with full activation
    # recomputation, 1F1B, fp16 mixed precision, unfused attention with dropout; one DGX A100.
    rows = []
    for index, fields in enumerate(data_rows(source)):
        (gpus, global_batch, micro_batch, hidden, heads, layers, seq_len, tp, dp, pp,
         time_ms) = [field.strip() for field in fields]
        row = blank_row()
        row.update({
            "name": f"vtrain-{index:03d}",
            "group": f"gpt-h{hidden}-l{layers}-{gpus}gpu",
            "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads,
            "ffn_hidden": str(4 * int(hidden)), "vocab": "50257", "seq_len": seq_len,
            "attention": "unfused", "dropout": "1",
            "gpus": gpus, "tp": tp, "pp": pp, "dp": dp,
            "micro_batch": micro_batch, "global_batch": global_batch,
            "recompute": "full", "sequence_parallel": "0", "dtype": "fp16",
            "distributed_optimizer": "0", "device": "A100-80GB", "topology": "dgx-a100",
            # Megatron-DeepSpeed's get_batch (broadcast_data) copies the sizes to the host.
            # p2p_scatter_gather stays unset: vTrain does not say which Megatron-DeepSpeed path
            # and version ran (configs/validation/README.md, "vTrain runs: framework path").
            "get_batch_sync": "1",
            "nodes": "1", "measured_iteration_s": f"{float(time_ms) / 1000.0:.9g}",
        })
        rows.append(row)
    return rows


def convert_korthikanti(source):
    # Table 5 end-to-end iterations: "Full Recompute" (no sequence parallelism) and
    # "Present Work" (sequence parallelism + selective recomputation). Selene: DGX A100 80GB
    # nodes, 8 HDR 200 Gb/s HCAs each.
    with open(source, newline="") as handle:
        lines = [line for line in handle if not line.startswith("#")]
    rows = []
    for record in csv.DictReader(lines):
        if record["record"] != "table3_table5_model":
            continue
        gpus = int(record["num_gpus"])
        nodes = max(1, gpus // 8)
        topology = "dgx-a100" if nodes == 1 else f"dgx-a100-{nodes}node"
        interleave = record["pipeline_interleave_stages"] or "1"
        for label, recompute, sequence_parallel, column in (
                ("full-recompute", "full", "0", "iter_time_full_recompute_s"),
                ("sp-selective", "selective", "1", "iter_time_seqpar_selective_s")):
            row = blank_row(KORTHIKANTI_COLUMNS)
            model = record["model"].lower()
            row.update({
                "name": f"korthikanti-{model}-{label}",
                "group": f"korthikanti-{model}",
                "model": f"korthikanti-{model}",
                "gpus": str(gpus), "tp": record["tensor_parallel"],
                "pp": record["pipeline_parallel"], "dp": record["data_parallel"],
                "virtual_stages": interleave if int(record["pipeline_parallel"]) > 1 else "1",
                "micro_batch": record["micro_batch_size"],
                "global_batch": record["global_batch_size"],
                "recompute": recompute, "sequence_parallel": sequence_parallel,
                "dtype": "bf16", "distributed_optimizer": "0", "device": "A100-80GB",
                # Megatron-LM 2022's get_batch (broadcast_data) copies the sizes to the host.
                "get_batch_sync": "1",
                # Megatron-LM of May 2022 (the sequence-parallel release) still had the timers
                # whose start() and stop() call torch.cuda.synchronize() unconditionally.
                "timer_syncs": "1",
                "overlap_p2p_comm": "0",
                "p2p_scatter_gather": "1",
                "topology": topology, "nodes": str(nodes),
                "measured_iteration_s": record[column],
            })
            rows.append(row)
    return rows


def write(rows, path, provenance, columns=COLUMNS):
    with open(path, "w", newline="") as handle:
        for line in provenance:
            handle.write(f"# {line}\n")
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{path}: {len(rows)} runs")


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join("..", "shared", "data")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join("configs", "validation")
    os.makedirs(out, exist_ok=True)
    write(convert_vtrain(os.path.join(shared, "llm",
                                      "vtrain-singlenode-a100-calibration-half.csv")),
          os.path.join(out, "vtrain-singlenode-a100.csv"),
          ["source: shared/data/llm/vtrain-singlenode-a100-calibration-half.csv (vTrain,",
           "Bang et al. MICRO 2024, data/ground_truth_single.csv, MIT): measured Megatron-DeepSpeed",
           "iterations on one 8x A100 node; converted by tools/convert_llm_runs.py"])
    write(convert_korthikanti(os.path.join(shared, "llm", "korthikanti2022.csv")),
          os.path.join(out, "korthikanti2022.csv"),
          ["source: shared/data/llm/korthikanti2022.csv (Korthikanti et al. 2022,",
           "arXiv:2205.05198, Table 5 end-to-end iteration times on Selene, A100 80GB);",
           "converted by tools/convert_llm_runs.py"],
          KORTHIKANTI_COLUMNS)


if __name__ == "__main__":
    main()
