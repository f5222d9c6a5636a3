// perfsim-bench-collectives: NCCL collectives over message sizes from 4 bytes doubling up to
// a memory cap (seed 001 Sec. IV-A), with algbw and busbw as nccl-tests reports them, into
// /benchmarks/collective/<name> tables that `perfsim fit` reads.
//   one process driving all local GPUs:  perfsim-bench-collectives --mode local -o out.h5
//   one MPI process per GPU, any nodes:  srun / mpirun ... perfsim-bench-collectives --mode mpi
// In MPI mode rank 0 makes the NCCL unique id and broadcasts it with MPI_Bcast; each
// iteration's time is the slowest rank's (MPI_Allreduce MAX), and rank 0 writes the file.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "microbench/cuda/bench_common.hpp"
#include "microbench/cuda/collective_launch.hpp"
#include "microbench/cuda/device_query.hpp"
#include "microbench/host/collective_results.hpp"
#include "microbench/host/collective_sizes.hpp"
#include "perfsim/error.hpp"

namespace perfsim::microbench::cuda {
namespace {

constexpr int kNameLength = 256;

struct CollectivesOptions {
  std::string output;
  std::string mode = "local";
  std::vector<std::string> collectives{"all_reduce",     "all_to_all", "all_to_allv", "all_gather",
                                       "reduce_scatter", "broadcast",  "sendrecv"};
  Bytes min_bytes = 4;
  Bytes max_bytes = 0;  // 0: up to the memory cap
  double memory_fraction = 0.5;
  int warmup = 5;  // nccl-tests' -w and -n defaults
  int iterations = 20;
  bool in_place = false;
  std::string name_suffix;
  std::uint64_t seed = 1;
  bool dry_run = false;
  int ranks_for_dry_run = 8;
};

struct World {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int nodes = 1;
};

World mpi_world() {
  World world;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &world.local_rank);
  MPI_Comm_free(&node);
  const int leader = world.local_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &world.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return world;
}

// Every rank's GPU, gathered on all ranks (for the device attribute).
std::vector<GpuInfo> gather_gpus(const GpuInfo& mine, int world_size) {
  std::array<char, kNameLength> name{};
  mine.name.copy(name.data(), kNameLength - 1);
  std::vector<char> all(static_cast<std::size_t>(kNameLength * world_size));
  MPI_Allgather(name.data(), kNameLength, MPI_CHAR, all.data(), kNameLength, MPI_CHAR,
                MPI_COMM_WORLD);
  std::vector<GpuInfo> gpus(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    gpus[static_cast<std::size_t>(r)].index = r;
    gpus[static_cast<std::size_t>(r)].name = all.data() + r * kNameLength;
  }
  return gpus;
}

// The participants this process drives, and the group's size and nodes.
struct Setup {
  std::vector<Participant> participants;
  int n_ranks = 0;
  int n_nodes = 1;
  std::vector<GpuInfo> all_gpus;
  LocalTopology topology;
};

Bytes agreed_buffer_bytes(const std::vector<int>& devices, double fraction) {
  Bytes smallest_free = INT64_MAX;
  for (int device : devices)
    smallest_free = std::min(smallest_free, free_device_memory_bytes(device));
  Bytes everywhere = 0;
  MPI_Allreduce(&smallest_free, &everywhere, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  // Send and receive buffers share the fraction.
  return static_cast<Bytes>(static_cast<double>(everywhere) * fraction / 2) / 4096 * 4096;
}

Setup local_setup(const CollectivesOptions& options, const World& world) {
  if (world.size != 1)
    throw InputError("<command line>", "--mode local",
                     "runs as one process driving every local GPU, but " +
                         std::to_string(world.size) + " MPI processes started (use --mode mpi)");
  Setup setup;
  const int count = visible_device_count();
  std::vector<int> devices(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d)
    devices[static_cast<std::size_t>(d)] = d;
  const Bytes buffer = agreed_buffer_bytes(devices, options.memory_fraction);
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(count));
  check_nccl(ncclCommInitAll(comms.data(), count, devices.data()), "ncclCommInitAll");
  for (int d = 0; d < count; ++d)
    setup.participants.emplace_back(d, d, comms[static_cast<std::size_t>(d)], buffer);
  setup.n_ranks = count;
  setup.topology = query_local_topology(devices, true);
  setup.all_gpus = setup.topology.gpus;
  return setup;
}

Setup mpi_setup(const CollectivesOptions& options, const World& world) {
  Setup setup;
  const int count = visible_device_count();
  if (count == 0)
    throw RuntimeFailure("rank " + std::to_string(world.rank) + ": no visible GPU");
  const int device = world.local_rank % count;
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (world.rank == 0)
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  const Bytes buffer = agreed_buffer_bytes({device}, options.memory_fraction);
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, world.size, id, world.rank), "ncclCommInitRank");
  setup.participants.emplace_back(device, world.rank, comm, buffer);
  setup.n_ranks = world.size;
  setup.n_nodes = world.nodes;
  std::vector<int> local_devices(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d)
    local_devices[static_cast<std::size_t>(d)] = d;
  setup.topology = query_local_topology(local_devices, false);
  setup.all_gpus = gather_gpus(query_gpu(device, false), world.size);
  return setup;
}

// Times per iteration, the slowest of all processes.
std::vector<double> slowest_over_processes(std::vector<double> times_us) {
  MPI_Allreduce(MPI_IN_PLACE, times_us.data(), static_cast<int>(times_us.size()), MPI_DOUBLE,
                MPI_MAX, MPI_COMM_WORLD);
  return times_us;
}

void print_dry_run(const CollectivesOptions& options) {
  const Bytes cap = options.max_bytes > 0 ? 2 * options.max_bytes : Bytes{80} << 30;
  for (const std::string& name : options.collectives) {
    const CollectiveTest test = parse_collective_test(name);
    const auto sizes =
        collective_message_sizes(test.kind, {options.min_bytes, cap, 4, options.ranks_for_dry_run});
    if (sizes.empty())
      throw InputError("<command line>", "--max-bytes", "no size between --min-bytes and it");
    std::cout << name << ": " << sizes.size() << " sizes, " << sizes.front() << " .. "
              << sizes.back() << " bytes on " << options.ranks_for_dry_run << " ranks\n";
  }
}

int run(const CollectivesOptions& options, const std::string& command_line) {
  if (options.dry_run) {
    print_dry_run(options);
    return 0;
  }
  const World world = mpi_world();
  Setup setup = options.mode == "mpi" ? mpi_setup(options, world) : local_setup(options, world);
  const Bytes buffer = setup.participants.front().buffer_bytes();
  const std::string software = software_versions();
  bool truncate = true;
  for (const std::string& name : options.collectives) {
    const CollectiveTest test = parse_collective_test(name);
    // Send and receive buffers hold `buffer` bytes each, and no collective needs more than
    // its message size in one buffer: cap the sweep at a message of `buffer` bytes.
    Bytes cap = collective_buffer_bytes(test.kind, buffer, setup.n_ranks);
    if (options.max_bytes > 0)
      cap = std::min(cap, collective_buffer_bytes(test.kind, options.max_bytes, setup.n_ranks));
    const auto sizes =
        collective_message_sizes(test.kind, {options.min_bytes, cap, 4, setup.n_ranks});
    CollectiveRun run;
    run.kind = test.kind;
    run.n_ranks = setup.n_ranks;
    run.n_nodes = setup.n_nodes;
    run.name = collective_table_name(test.kind, run.n_ranks, run.n_nodes) + options.name_suffix;
    run.device = device_label(setup.all_gpus);
    run.nccl = nccl_version();
    run.software = software;
    run.source = "perfsim-bench-collectives --mode " + options.mode + " (" + command_line + ")";
    run.metadata["topology_rank0_node"] = describe_topology(setup.topology);
    run.metadata["test"] =
        collective_test_name(test) + (test.kind == CollectiveKind::kSend ? " (ring)" : "") +
        (test.random_sizes ? " (random per-peer sizes)" : "") + ", fp32 sum, warm-up " +
        std::to_string(options.warmup) + ", timed " + std::to_string(options.iterations);
    if (const char* dump = std::getenv("NCCL_TOPO_DUMP_FILE"))
      run.metadata["nccl_topo_dump_file"] = dump;
    int skipped = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      AllToAllvSizes random_sizes;
      Bytes model_bytes = sizes[i];
      if (test.random_sizes) {
        // Every process draws the same matrix from the same seed.
        random_sizes = random_all_to_allv_sizes(setup.n_ranks, sizes[i], 4, options.seed + i);
        model_bytes = random_sizes.model_message_bytes();
        if (model_bytes > buffer) {  // some rank would receive more than its buffer holds
          ++skipped;
          continue;
        }
      }
      for (const bool in_place : {false, true}) {
        if (in_place &&
            (!options.in_place || test.kind == CollectiveKind::kAllToAll ||
             test.kind == CollectiveKind::kAllToAllv || test.kind == CollectiveKind::kSend))
          continue;
        const std::vector<double> times = slowest_over_processes(time_collective(
            setup.participants, setup.n_ranks, test, sizes[i], in_place,
            test.random_sizes ? &random_sizes : nullptr, options.warmup, options.iterations));
        run.measurements.push_back({model_bytes, sizes[i], in_place, times});
        if (world.rank == 0) {
          const TimingSummary s = summarize_times(times);
          report_progress(i + 1, sizes.size(),
                          name + (in_place ? " in-place " : " ") + std::to_string(model_bytes) +
                              " bytes: " + std::to_string(s.mean_us) + " us");
        }
      }
    }
    std::stable_sort(run.measurements.begin(), run.measurements.end(),
                     [](const CollectiveMeasurement& a, const CollectiveMeasurement& b) {
                       return a.in_place != b.in_place ? !a.in_place : a.bytes < b.bytes;
                     });
    run.metadata["sizes_skipped_for_buffer"] = std::to_string(skipped);
    if (world.rank == 0 && !run.measurements.empty()) {
      write_collective_run(options.output, run, truncate);
      truncate = false;
      std::cout << "wrote " << options.output << ":/benchmarks/collective/" << run.name << " ("
                << run.measurements.size() << " sizes, " << run.device << ")\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace perfsim::microbench::cuda

int main(int argc, char** argv) {
  using namespace perfsim::microbench::cuda;
  CLI::App app{"perfsim-bench-collectives: NCCL sweeps -> benchmark HDF5 /benchmarks/collective"};
  CollectivesOptions options;
  app.add_option("-o,--output", options.output, "benchmark HDF5 to write (replaced)")->required();
  app.add_option("--mode", options.mode,
                 "local: one process drives all local GPUs; mpi: one MPI process per GPU")
      ->check(CLI::IsMember({"local", "mpi"}));
  app.add_option("--collectives", options.collectives,
                 "all_reduce all_to_all all_to_allv all_gather reduce_scatter broadcast sendrecv");
  app.add_option("--min-bytes", options.min_bytes, "first size (doubling)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-bytes", options.max_bytes, "last size (default: the memory cap)");
  app.add_option("--memory-fraction", options.memory_fraction,
                 "share of the free GPU memory for the send and receive buffers")
      ->check(CLI::Range(0.01, 0.95));
  app.add_option("--warmup", options.warmup, "untimed iterations per size")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iterations", options.iterations, "timed iterations per size")
      ->check(CLI::Range(1, 100000));
  app.add_flag("--in-place", options.in_place, "also measure in-place variants");
  app.add_option("--name-suffix", options.name_suffix, "appended to every table name");
  app.add_option("--seed", options.seed, "seed of all-to-allv's random per-peer sizes");
  app.add_flag("--dry-run", options.dry_run, "print the size sweeps and exit without a GPU");
  app.add_option("--dry-run-ranks", options.ranks_for_dry_run, "group size for --dry-run");
  CLI11_PARSE(app, argc, argv);
  const std::string command_line = joined_command_line(argc, argv);
  if (options.dry_run)
    return run_bench_main("perfsim-bench-collectives", [&] { return run(options, command_line); });
  MPI_Init(&argc, &argv);
  const int status =
      run_bench_main("perfsim-bench-collectives", [&] { return run(options, command_line); });
  if (status != 0)
    MPI_Abort(MPI_COMM_WORLD, status);  // one failed rank must not leave the others waiting
  MPI_Finalize();
  return status;
}
