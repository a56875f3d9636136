// SPDX-License-Identifier: BSD-3-Clause
// A worker node process for the e2e tests: no database access; it joins
// the runner node at HOST:PORT and runs "remote_record", which appends
// "id attempt node" to DIR/NODE.ledger before it returns (one write with
// O_APPEND: whole lines, kept by the kernel if the process is killed),
// and "remote_wait_cancel", which writes DIR/ID.started, works until it is
// cancelled and then writes the CLOCK_REALTIME time (ns) at which it saw
// the cancel to DIR/ID.cancelled. Writes its pid to DIR/NODE.pid. Exits 0
// when the runner lets it go, 1 when the runner is lost or refuses it.
//
//   cafmq-e2e-worker HOST PORT SECRET NODE CAPACITY DIR

#include <fstream>
#include <iostream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "cafmq/actors/worker.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace {

std::string dir;
std::string node;

caf::error remote_record(cafmq::current_task& task) {
  static int fd = open((dir + "/" + node + ".ledger").c_str(),
                       O_WRONLY | O_CREAT | O_APPEND, 0644);
  // Long enough that a killed worker dies with attempts in hand.
  std::this_thread::sleep_for(std::chrono::milliseconds{1});
  auto line = cafmq::to_string(task.id()) + " " + std::to_string(task.attempt())
              + " " + node + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    return cafmq::make_error(cafmq::errc::handler_failed, "ledger write");
  return caf::none;
}

void write_file(const std::string& name, const std::string& text) {
  auto tmp = dir + "/." + name;
  std::ofstream{tmp} << text;
  rename(tmp.c_str(), (dir + "/" + name).c_str());
}

caf::error remote_wait_cancel(cafmq::current_task& task) {
  auto id = cafmq::to_string(task.id());
  write_file(id + ".started", "1");
  while (!task.cancelled())
    std::this_thread::sleep_for(std::chrono::microseconds{200});
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  write_file(id + ".cancelled",
             std::to_string(ts.tv_sec * 1'000'000'000LL + ts.tv_nsec));
  return cafmq::make_error(cafmq::errc::handler_failed,
                           "stopped: " + to_string(task.cancelled_because()));
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: cafmq-e2e-worker HOST PORT SECRET NODE CAPACITY "
                 "DIR\n";
    return 2;
  }
  node = argv[4];
  dir = argv[6];
  write_file(node + ".pid", std::to_string(getpid()));
  auto tasks = std::make_shared<cafmq::registry>();
  tasks->add({"remote_record", remote_record, {}});
  tasks->add({"remote_wait_cancel", remote_wait_cancel, {}});
  cafmq::actors::worker_config cfg;
  cfg.node = node;
  cfg.tasks = tasks;
  cfg.capacity = std::stoi(argv[5]);
  cafmq::actors::node_endpoint where;
  where.host = argv[1];
  where.port = static_cast<std::uint16_t>(std::stoi(argv[2]));
  where.secret = argv[3];
  auto worker = cafmq::actors::worker_node::start(cfg, where);
  if (!worker) {
    std::cerr << node << ": " << cafmq::render(worker.error()) << '\n';
    return 1;
  }
  if (auto err = (*worker)->wait()) {
    std::cerr << node << ": worker ended: " << cafmq::render(err) << '\n';
    return 1;
  }
  std::cout << node << ": let go by its runner\n";
  return 0;
}
