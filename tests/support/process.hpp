#pragma once

// Child processes for tests that need real concurrency between processes.

#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace cafmq::test {

/// Starts `cmd` through the shell; its stdout and stderr can be read back.
inline FILE* start_process(const std::string& cmd) {
  return popen((cmd + " 2>&1").c_str(), "r");
}

/// Waits for the child, appends its output to `output`, returns its exit code.
inline int finish_process(FILE* child, std::string& output) {
  char buf[256];
  while (fgets(buf, sizeof(buf), child) != nullptr)
    output += buf;
  auto status = pclose(child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace cafmq::test
