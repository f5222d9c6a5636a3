#include "mpi_sim/mpi/timeline_stream.hpp"

#include <cereal/archives/binary.hpp>

#include <sstream>
#include <string>

#include "perfsim/error.hpp"
#include "perfsim/rank_result_serialization.hpp"

namespace perfsim::mpi {
namespace {

constexpr int kTimelineTag = 7301;

std::string serialize(const RankResult& result) {
  std::ostringstream stream;
  {
    cereal::BinaryOutputArchive archive(stream);
    archive(result);
  }
  return std::move(stream).str();
}

RankResult receive_from(MPI_Comm world, int process) {
  MPI_Status status;
  MPI_Probe(process, kTimelineTag, world, &status);
  int length = 0;
  MPI_Get_count(&status, MPI_BYTE, &length);
  std::string bytes(static_cast<std::size_t>(length), '\0');
  MPI_Recv(bytes.data(), length, MPI_BYTE, process, kTimelineTag, world, MPI_STATUS_IGNORE);
  std::istringstream input(bytes);
  cereal::BinaryInputArchive archive(input);
  RankResult result;
  archive(result);
  return result;
}

}  // namespace

void stream_timelines_to_root(MPI_Comm world, std::vector<RankResult>& local_results,
                              std::span<const int> process_of_rank,
                              const std::function<bool(int)>& wanted,
                              const std::function<void(const RankResult&)>& sink_on_root) {
  int me = 0;
  MPI_Comm_rank(world, &me);
  auto local = [&](int rank) -> RankResult& {
    for (RankResult& result : local_results) {
      if (result.sim_rank == rank)
        return result;
    }
    throw RuntimeFailure("timeline: rank " + std::to_string(rank) + " is not on process " +
                         std::to_string(me));
  };
  // Every process walks the ranks in the same order, so each send meets its receive and no
  // process waits on another that waits on it.
  for (int rank = 0; rank < static_cast<int>(process_of_rank.size()); ++rank) {
    if (!wanted(rank))
      continue;
    const int owner = process_of_rank[static_cast<std::size_t>(rank)];
    if (owner == me && me == 0) {
      sink_on_root(local(rank));
    } else if (owner == me) {
      const std::string bytes = serialize(local(rank));
      if (bytes.size() > 2'000'000'000UL)
        throw RuntimeFailure("timeline of rank " + std::to_string(rank) + " exceeds 2 GB");
      MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, kTimelineTag, world);
    } else if (me == 0) {
      sink_on_root(receive_from(world, owner));
    }
  }
  for (RankResult& result : local_results)
    std::vector<TimelineSlice>().swap(result.timeline);
}

}  // namespace perfsim::mpi
