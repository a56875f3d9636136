// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Child processes for tests that need real concurrency between processes.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <csignal>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cafmq::test {

/// Starts `cmd` through the shell; its stdout and stderr can be read back.
/// The shell, and a program that `cmd` starts with `exec`, are killed when
/// the test process ends (setpriv --pdeathsig): a test that fails early
/// leaves no runner behind holding ctest's output pipe open, which made
/// ctest wait for the test's whole TIMEOUT.
inline FILE* start_process(const std::string& cmd) {
  std::string quoted;
  for (auto c : cmd + " 2>&1") {
    if (c == '\'')
      quoted += "'\\''";
    else
      quoted += c;
  }
  return popen(
    ("exec setpriv --pdeathsig KILL -- sh -c '" + quoted + "'").c_str(), "r");
}

/// Waits for the child, appends its output to `output`, returns its exit code.
inline int finish_process(FILE* child, std::string& output) {
  char buf[256];
  while (fgets(buf, sizeof(buf), child) != nullptr)
    output += buf;
  auto status = pclose(child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The same, for a child whose pid is known, waiting at most `limit`: a
/// child that has not ended by then gets the stacks of its threads printed
/// to stderr (by gdb, when installed: where it hangs, in the test's log)
/// and is killed; returns -2 then.
inline int finish_process(FILE* child, std::string& output, int pid,
                          std::chrono::seconds limit) {
  std::mutex mtx;
  std::condition_variable cv;
  bool ended = false;
  bool killed = false;
  std::thread watchdog{[&] {
    std::unique_lock<std::mutex> guard{mtx};
    if (cv.wait_for(guard, limit, [&] { return ended; }))
      return;
    killed = true;
    guard.unlock();
    std::system(("gdb -p " + std::to_string(pid)
                 + " -batch -ex 'thread apply all bt' 2>&1"
                   " | grep -E '^(Thread|#)' | head -n 300 >&2")
                  .c_str());
    ::kill(pid, SIGKILL);
  }};
  auto rc = finish_process(child, output);
  {
    std::lock_guard<std::mutex> guard{mtx};
    ended = true;
  }
  cv.notify_all();
  watchdog.join();
  return killed ? -2 : rc;
}

// A scratch directory for the processes' files (port, pids, ledgers).
struct scratch {
  scratch() {
    char tmpl[] = "/tmp/cafmq-e2e-XXXXXX";
    dir = mkdtemp(tmpl);
  }

  ~scratch() {
    std::system(("rm -rf '" + dir + "'").c_str());
  }

  std::string path(const std::string& name) const {
    return dir + "/" + name;
  }

  // The file's contents once it exists (waits up to `limit`).
  std::string wait_for(const std::string& name,
                       std::chrono::seconds limit
                       = std::chrono::seconds{60}) const {
    auto until = std::chrono::steady_clock::now() + limit;
    struct stat st;
    while (stat(path(name).c_str(), &st) != 0 || st.st_size == 0) {
      if (std::chrono::steady_clock::now() > until)
        throw std::runtime_error("no " + name + " after "
                                 + std::to_string(limit.count()) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    std::ifstream in{path(name)};
    return std::string{std::istreambuf_iterator<char>{in}, {}};
  }

  std::string dir;
};

/// Kills (SIGCONT, then SIGKILL) the processes it holds when it goes out of
/// scope: what is left of a test's runners when the test ends early.
struct reaper {
  std::vector<int> pids;

  ~reaper() {
    for (auto pid : pids) {
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGKILL);
    }
  }
};

} // namespace cafmq::test
