#include "mpi_sim/mpi/stall_alarm.hpp"

#include <cstdio>
#include <cstdlib>

namespace perfsim::mpi {
namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Exit code of an I/O or environment failure (README, exit codes).
constexpr int kExitEnvironment = 3;

}  // namespace

StallAlarm::StallAlarm(std::chrono::seconds timeout, std::string message)
    : timeout_(timeout), message_(std::move(message)), watchdog_([this] { watch(); }) {}

StallAlarm::~StallAlarm() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_one();
  watchdog_.join();
}

void StallAlarm::wait_begins() {
  wait_began_ns_.store(now_ns(), std::memory_order_relaxed);
}

void StallAlarm::wait_ends() {
  wait_began_ns_.store(0, std::memory_order_relaxed);
}

void StallAlarm::watch() {
  // Late by at most an eighth of the timeout.
  const auto check_every =
      std::max<std::chrono::milliseconds>(timeout_ / 8, std::chrono::milliseconds(10));
  std::unique_lock lock(mutex_);
  while (!stop_requested_.wait_for(lock, check_every, [this] { return stopping_; })) {
    const long long began = wait_began_ns_.load(std::memory_order_relaxed);
    if (began == 0 || now_ns() - began < std::chrono::nanoseconds(timeout_).count())
      continue;
    const std::string line = "perfsim: error: " + message_ + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    std::_Exit(kExitEnvironment);
  }
}

}  // namespace perfsim::mpi
