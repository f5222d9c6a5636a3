#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) in build-fuzz/ (or
# $PERFSIM_FUZZ_BUILD) and runs
# each for a bounded time from the committed seed corpus:
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 15 s, every target)
# New inputs go to build-fuzz/corpus/<target>/ (the committed corpus is not modified); a crash
# leaves build-fuzz/artifacts/<target>/crash-* and makes the script fail.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-15}"
shift || true
jobs="$(nproc)"
build="${PERFSIM_FUZZ_BUILD:-build-fuzz}"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="" \
      -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DPERFSIM_FUZZ=ON \
      -DPERFSIM_BUILD_TESTS=OFF -DPERFSIM_BUILD_MICROBENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target perfsim_fuzzers

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  for seeds in tests/fuzz/corpus/*/; do
    targets+=("$(basename "$seeds")")
  done
fi

failed=()
for target in "${targets[@]}"; do
  if [ ! -x "$build/tests/fuzz/fuzz_$target" ]; then  # chakra_et needs protobuf
    echo "fuzz: $target not built, skipped"
    continue
  fi
  work="$build/corpus/$target"
  artifacts="$build/artifacts/$target"
  mkdir -p "$work" "$artifacts"
  log="$build/fuzz_$target.log"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a loader must not balloon.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$build/tests/fuzz/fuzz_$target" "$work" "tests/fuzz/corpus/$target" \
       -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=131072 \
       -dict=tests/fuzz/json.dict -artifact_prefix="$artifacts/" -print_final_stats=1 \
       >"$log" 2>&1; then
    runs="$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')"
    echo "fuzz: $target: ${runs:-?} executions in ${seconds} s, no crash"
  else
    echo "fuzz: $target: FAILED, see $log and $artifacts/" >&2
    grep -m3 -E 'ERROR|runtime error|deadly signal|timeout|out-of-memory' "$log" >&2 || true
    failed+=("$target")
  fi
done
echo "fuzz: build and runs took ${SECONDS} s"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}" >&2
  exit 1
fi
