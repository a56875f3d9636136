// SPDX-License-Identifier: BSD-3-Clause
// The shared task handlers of cafmq-e2e (tasks.hpp).

#include "tasks.hpp"

#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "cafmq/error.hpp"

namespace cafmq::e2e {

ledger::ledger(const std::string& path)
  : fd_(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644)) {
  // nop
}

caf::error ledger::add(const current_task& task, const std::string& rest) {
  auto line = to_string(task.id()) + " " + std::to_string(task.attempt()) + " "
              + rest + "\n";
  if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    return make_error(errc::handler_failed, "ledger write");
  return caf::none;
}

void until_cancelled(const current_task& task, std::chrono::microseconds poll) {
  while (!task.cancelled())
    std::this_thread::sleep_for(poll);
}

caf::error stopped(const current_task& task) {
  return make_error(errc::handler_failed,
                    "stopped: " + to_string(task.cancelled_because()));
}

caf::error wait_cancel(current_task& task) {
  until_cancelled(task);
  return stopped(task);
}

} // namespace cafmq::e2e
