// SPDX-License-Identifier: BSD-3-Clause
// A runner with isolated tasks for the process isolation e2e test. Its
// worker processes are this program again (serve_worker_process at the top
// of main). Every handler appends "ID ATTEMPT PID WHAT" to DIR/ledger (one
// write with O_APPEND: whole lines, kept by the kernel when the process
// dies right after):
// - "crash" (isolated): on attempts below its JSON payload's "until" it
//   writes "crashing" and dies by the payload's "how" ("abort" or "segv");
//   then it writes "done".
// - "isolated_ok" (isolated) and "local_ok" (in the runner) write "done".
// The runner writes its pid to DIR/pid once started, runs until DIR/stop
// exists, then stops gracefully and prints "STOPPED".
//
//   cafmq-e2e-isolated URL DIR

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cafmq/actors/isolation.hpp"
#include "cafmq/actors/runner.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace {

std::string dir;

caf::error record(cafmq::current_task& task, const std::string& what) {
  static int fd
    = open((dir + "/ledger").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  auto line = cafmq::to_string(task.id()) + " " + std::to_string(task.attempt())
              + " " + std::to_string(getpid()) + " " + what + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    return cafmq::make_error(cafmq::errc::handler_failed, "ledger write");
  return caf::none;
}

caf::error crash(cafmq::current_task& task) {
  auto args = task.json<nlohmann::json>();
  if (!args)
    return args.error();
  if (task.attempt() < (*args)["until"].get<int>()) {
    if (auto err = record(task, "crashing"))
      return err;
    if ((*args)["how"] == "segv")
      std::raise(SIGSEGV);
    std::abort();
  }
  return record(task, "done");
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cafmq-e2e-isolated URL DIR\n";
    return 2;
  }
  dir = argv[2];
  auto tasks = std::make_shared<cafmq::registry>();
  cafmq::task_definition crashing{"crash", crash, {}};
  crashing.isolated = true;
  crashing.defaults.backoff = std::chrono::milliseconds{10};
  tasks->add(crashing);
  cafmq::task_definition away{
    "isolated_ok",
    [](cafmq::current_task& t) { return record(t, "done"); },
    {}};
  away.isolated = true;
  tasks->add(away);
  tasks->add(
    {"local_ok", [](cafmq::current_task& t) { return record(t, "done"); }, {}});
  cafmq::actors::runner_config cfg;
  cfg.database_url = argv[1];
  cfg.node = "isolating";
  cfg.tasks = tasks;
  cfg.worker_processes = 2;
  cfg.worker_process_capacity = 2;
  cafmq::actors::serve_worker_process(cfg);
  auto runner = cafmq::actors::runner::start(cfg);
  if (!runner) {
    std::cerr << cfg.node << ": " << cafmq::render(runner.error()) << '\n';
    return 1;
  }
  {
    std::ofstream out{dir + "/.pid"};
    out << getpid();
  }
  rename((dir + "/.pid").c_str(), (dir + "/pid").c_str());
  struct stat st;
  while (stat((dir + "/stop").c_str(), &st) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  (*runner)->stop();
  std::cout << "STOPPED" << std::endl;
  return 0;
}
