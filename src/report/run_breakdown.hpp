#pragma once
// The generic part of a RunReport, from every rank's result: iteration time, slowest rank and
// where the time goes. Per rank the breakdown lines add up to its iteration time:
//   compute        kernel time of every non-communication kernel
//   exposed_<kind> time the compute stream waited for the collectives of that group kind
//   exposed_p2p    pipeline point-to-point: the waiting while the transfer was in flight
//   bubble         pipeline point-to-point: the waiting before it could start (the
//                  neighbouring stage had not reached its send or receive yet)
//   other          the rest: compute idle for the CPU (host-bound), launch gaps, the rank's
//                  start offset (Kineto input starts each rank at its measured step start),
//                  streams still busy after the last compute kernel (negative only when
//                  compute kernels of several streams overlap)
#include <map>
#include <span>
#include <string>

#include "perfsim/rank_result.hpp"
#include "report/group_kinds.hpp"
#include "report/run_report.hpp"

namespace perfsim::report {

// One rank's lines by key ("compute", "exposed_tp", "bubble", "other", ...), adding up to its
// iteration time.
std::map<std::string, double> rank_breakdown(const RankResult& result, const GroupKindOf& kind_of);

RunReport build_run_report(std::span<const RankResult> results, const GroupKindOf& kind_of);

}  // namespace perfsim::report
