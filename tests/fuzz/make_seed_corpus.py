#!/usr/bin/env python3
"""Writes tests/fuzz/corpus/<target>/ from the repository's fixtures and configs and from small,
deterministic subsets of the real traces in shared/data (provenance: tests/fuzz/README.md).

Usage: tests/fuzz/make_seed_corpus.py [SHARED_DATA_DIR]   (default: ../shared/data)
Seeds stay small (a few kB): libFuzzer mutates small inputs much faster than 1 MB traces.
"""
import glob
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data")


def put(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as out:
        out.write(data)


def copy(target, pattern):
    for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
        with open(path, "rb") as source:
            put(target, os.path.basename(path), source.read())


def tar_member(archive, member):
    with tarfile.open(archive) as tar:
        return tar.extractfile(member).read()


def kineto_subset(text, events_kept):
    """The first events of a real Kineto trace, with kernels whose launch was cut dropped
    unless their correlation id is below every kept launch (then they were queued before)."""
    doc = json.loads(text)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"][:events_kept]
    launches = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime"}
    first = min(launches) if launches else 0
    kept = [e for e in events
            if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")
            or e["args"]["correlation"] in launches or e["args"]["correlation"] < first]
    doc["traceEvents"] = kept
    return json.dumps(doc, separators=(",", ":"))


def et_subset(text, nodes_kept):
    """The first nodes of a real ET whose parent ("parent", or "ctrl_deps" in 1.1-chakra)
    stays inside the kept set; the first node is the root."""
    doc = json.loads(text)
    link = "parent" if "parent" in doc["nodes"][0] else "ctrl_deps"
    kept, ids = [], set()
    for node in sorted(doc["nodes"], key=lambda n: n["id"]):
        if len(kept) == nodes_kept:
            break
        if not kept or node[link] in ids:
            kept.append(node)
            ids.add(node["id"])
    doc["nodes"] = kept
    return json.dumps(doc, separators=(",", ":"))


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    copy("kineto", "tests/data/kineto/*.json")
    copy("kineto", "tests/data/malformed/kineto_*.json")
    copy("execution_trace", "tests/data/malformed/et_*.json")
    copy("kineto", "tests/data/mismatch/rank0.json")
    copy("execution_trace", "tests/data/et_small/*.json")
    copy("chakra_json", "tests/data/malformed/chakra_*.json")
    copy("chakra_et", "tests/data/chakra/*.et")
    copy("llm_model", "configs/models/*.json")
    copy("device", "configs/devices/*.json")
    copy("topology", "configs/topologies/4xa100.json")
    copy("topology", "configs/topologies/dgx1-v100.json")
    copy("topology", "configs/topologies/hgx-h100-2node.json")
    copy("sweep", "configs/sweeps/*.json")
    copy("nccl_tests_log", "tests/data/nccl/*.txt")
    for path in sorted(glob.glob(os.path.join(ROOT, "configs/validation/*.csv"))):
        with open(path) as source:  # the header, comments and the first 12 runs
            lines = source.read().splitlines(keepends=True)
        kept, runs = [], 0
        for line in lines:
            is_run = line.strip() and not line.startswith("#") and kept and runs < 13
            if is_run or not line.strip() or line.startswith("#") or not kept:
                kept.append(line)
                runs += 1 if is_run else 0
            if runs == 13:
                break
        put("run_table", os.path.basename(path), "".join(kept))
    copy("dlrm_config", "configs/dlrm/*.json")
    copy("calibration", "configs/assets/llm_calibration.json")
    copy("host_overheads", "tests/fuzz/seeds/host_overheads/*.json")

    for name in ("h100-ib400-2node-allreduce.txt", "v100-dgx1-hcm-1node-allreduce.txt"):
        with open(os.path.join(SHARED, "nccl-tests", name), "rb") as source:
            put("nccl_tests_log", name, source.read())
    traces = os.path.join(SHARED, "traces")
    kineto = tar_member(os.path.join(traces, "param-dlrm-8xV100", "dlrm_kineto.tar.gz"),
                        "dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json")
    put("kineto", "dlrm-worker1-first150.json", kineto_subset(kineto, 150))
    et = tar_member(os.path.join(traces, "param-dlrm-8xV100", "dlrm_pytorch_et.tar.gz"),
                    "dlrm_pytorch_et/dlrm_eg_0.json")
    put("execution_trace", "dlrm-eg0-first40.json", et_subset(et, 40))
    with gzip.open(os.path.join(traces, "param-resnet-2gpu", "resnet_2gpu_et.json.gz")) as source:
        put("execution_trace", "resnet-first40.json", et_subset(source.read(), 40))
    put("chakra_json", "small_chakra.0.json",
        tar_member(os.path.join(traces, "chakra-json", "json_trace.tar.gz"),
                   "jsonData/small_chakra.0.json"))
    for target in sorted(os.listdir(CORPUS)):
        files = sorted(os.listdir(os.path.join(CORPUS, target)))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        print(f"{target}: {len(files)} seeds, {size} bytes")


if __name__ == "__main__":
    main()
