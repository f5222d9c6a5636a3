#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (root) or an existing checkout:
#   scripts/setup.sh run    install what is missing, build the perfsim binary (Release) alone,
#                           run `mpirun -n 64 perfsim`
#   scripts/setup.sh test   install what is missing, build and run the whole test suite: the
#                           golden, MPI, CLI, sweep, fault, Python and style tests on the Release
#                           build, the unit and loader suites under ASan+UBSan, then every
#                           loader's fuzz target for a bounded time (scripts/fuzz.sh)
#   scripts/setup.sh build  install what is missing and build only
# Re-running on a machine that has everything installs nothing and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-run}"
jobs="$(nproc)"

# Exactly the Debian packages perfsim needs to build, run and test.
packages=(build-essential cmake git openmpi-bin libopenmpi-dev libhdf5-dev hdf5-tools
          libeigen3-dev libcereal-dev libgtest-dev libsimdjson-dev nlohmann-json3-dev
          libcli11-dev zlib1g-dev
          libjemalloc-dev  # the perfsim executable's allocator (optional at build time)
          libprotobuf-dev protobuf-compiler)  # Chakra .et traces (optional at build time)
if [ "$mode" = test ]; then
  packages+=(clang-format)     # the style test
  packages+=(slurm-wlm munge)  # the sweep test's one-node Slurm (tests/sweep/sweep_slurm.sh)
  packages+=(clang libclang-rt-14-dev)  # the fuzz targets (libFuzzer, tests/fuzz)
  packages+=(python3-venv)     # the pandas example test (h5py and pandas from PyPI in a venv)
  packages+=(chromium)         # the HTML report test (tests/html: headless screenshot)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install packages (or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Each stage's wall time, so that a CI log shows where its time limit goes.
stage_start=$SECONDS
stage_done() {
  echo "setup: $1 took $((SECONDS - stage_start)) s ($SECONDS s since the start)"
  stage_start=$SECONDS
}
stage_done "installing packages"

# Open MPI as root, oversubscribed, without busy-spinning idle ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1

# `test` runs the unit and loader suites once, under ASan+UBSan (below), so its Release build
# leaves them out; the golden, MPI, CLI, sweep, fault and Python suites run the optimized binary.
# (A cold build of both configurations and the fuzzers must fit CI's 90 minutes on two cores.)
suites="unit;loaders;golden;mpi"
if [ "$mode" = test ]; then
  suites="golden;mpi"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPERFSIM_TEST_SUITES="$suites" >/dev/null
# `run` needs the perfsim binary alone; `test` and `build` build everything (tests, CUDA
# microbenchmarks where nvcc is found).
if [ "$mode" = run ]; then
  cmake --build build -j"$jobs" --target perfsim
else
  cmake --build build -j"$jobs"
fi
stage_done "the Release build"

case "$mode" in
  build) ;;
  run)
    ulimit -n 4096 2>/dev/null || true
    mpirun --oversubscribe -n 64 build/mpi_sim/perfsim
    ;;
  test)
    ctest --test-dir build --output-on-failure -j"$jobs"
    stage_done "the Release suites (golden, MPI, CLI, sweeps, faults, Python, style)"
    # Sanitizers: the unit and loader suites with ASan and UBSan.
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
          -DPERFSIM_SANITIZE=ON -DPERFSIM_BUILD_MICROBENCH=OFF \
          -DPERFSIM_TEST_SUITES="unit;loaders" >/dev/null
    cmake --build build-asan -j"$jobs"
    stage_done "the ASan/UBSan build"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure -j"$jobs" -L "unit|loaders"
    stage_done "the ASan/UBSan unit and loader suites"
    # Fuzzing: each parser/loader under libFuzzer + ASan/UBSan from the committed seed corpus,
    # 15 s per target (PERFSIM_FUZZ_SECONDS to change it). Its clang build and runs take about
    # 7 minutes on two cores: a machine slow enough to be past 80 minutes here skips them and
    # says so, rather than lose every result above to CI's 90-minute limit.
    if [ "$SECONDS" -gt 4800 ]; then
      echo "setup: fuzzing SKIPPED: $SECONDS s have passed and CI stops at 5400 s" >&2
    else
      scripts/fuzz.sh "${PERFSIM_FUZZ_SECONDS:-15}"
      stage_done "fuzzing"
    fi
    ;;
  *)
    echo "usage: scripts/setup.sh run|test|build" >&2
    exit 2
    ;;
esac
