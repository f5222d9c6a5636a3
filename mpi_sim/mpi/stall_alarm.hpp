#pragma once
// Bounds a blocking MPI wait: MPI_Waitsome has no timeout, so a process whose partner stopped
// outside perfsim (not waiting, hence invisible to the deadlock watch) would wait forever. A
// watchdog thread that never calls MPI checks, a few times per timeout, whether the current wait
// has lasted longer than the timeout; if so it prints the error and ends the process with exit
// code 3 (Open MPI then ends the job). The waiting thread only stores a timestamp per wait.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace perfsim::mpi {

class StallAlarm {
 public:
  StallAlarm(std::chrono::seconds timeout, std::string message);
  ~StallAlarm();
  StallAlarm(const StallAlarm&) = delete;
  StallAlarm& operator=(const StallAlarm&) = delete;

  // Around one blocking wait.
  void wait_begins();
  void wait_ends();

 private:
  void watch();

  std::chrono::seconds timeout_;
  std::string message_;
  // steady_clock nanoseconds at which the current wait began; 0 outside waits.
  std::atomic<long long> wait_began_ns_{0};
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread watchdog_;
};

}  // namespace perfsim::mpi
