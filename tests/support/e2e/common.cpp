// SPDX-License-Identifier: BSD-3-Clause
// The helpers of common.hpp: published files, stop files, start failures.

#include "common.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include <sys/stat.h>

#include "cafmq/error.hpp"

namespace cafmq::e2e {

void publish(const std::string& path, const std::string& text) {
  auto slash = path.rfind('/');
  auto tmp = slash == std::string::npos
               ? "." + path
               : path.substr(0, slash + 1) + "." + path.substr(slash + 1);
  std::ofstream{tmp} << text;
  std::rename(tmp.c_str(), path.c_str());
}

void wait_for_file(const std::string& path) {
  struct stat st;
  while (stat(path.c_str(), &st) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
}

int fail(const std::string& who, const caf::error& err) {
  std::cerr << who << ": " << render(err) << std::endl;
  return 1;
}

} // namespace cafmq::e2e
