// SPDX-License-Identifier: BSD-3-Clause
// cafmq-e2e: the helper processes of the e2e, fault and script tests, one
// subcommand each (tests/support/e2e/<subcommand>.cpp, whose opening
// comment says what it runs and which environment variables it reads):
//
//   cafmq-e2e runner URL NODE MIN MAX [LEASE_MS]
//   cafmq-e2e node URL SECRET [CERT KEY CAFILE]
//   cafmq-e2e runner-node URL NODE SECRET DIR LEASE_MS
//   cafmq-e2e worker HOST PORT SECRET NODE CAPACITY DIR [URL [WORKER_URL]]
//   cafmq-e2e isolated URL DIR
//   cafmq-e2e pickup DIRECT_URL WORK_URL N [LISTEN_URL]
//   cafmq-e2e embedded URL DIR
//   cafmq-e2e watches PORT SECRET DIR
//
// A wrong argument count prints the subcommand's usage and exits 2. The
// worker processes of `isolated` run this program again with the same
// arguments (cafmq/actors/isolation.hpp), so they reach the same
// subcommand, which serves them before it does anything else.

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

using namespace cafmq::e2e;

struct subcommand {
  const char* name;
  const char* usage;
  // The argument counts it takes.
  std::vector<std::size_t> counts;
  int (*run)(const arguments&);
};

const subcommand subcommands[] = {
  {"runner", "URL NODE MIN MAX [LEASE_MS]", {4, 5}, run_runner},
  {"node", "URL SECRET [CERT KEY CAFILE]", {2, 5}, run_node},
  {"runner-node", "URL NODE SECRET DIR LEASE_MS", {5}, run_runner_node},
  {"worker",
   "HOST PORT SECRET NODE CAPACITY DIR [URL [WORKER_URL]]",
   {6, 7, 8},
   run_worker},
  {"isolated", "URL DIR", {2}, run_isolated},
  {"pickup", "DIRECT_URL WORK_URL N [LISTEN_URL]", {3, 4}, run_pickup},
  {"embedded", "URL DIR", {2}, run_embedded},
  {"watches", "PORT SECRET DIR", {3}, run_watches},
};

} // namespace

int main(int argc, char** argv) {
  std::string name = argc > 1 ? argv[1] : "";
  for (auto& x : subcommands) {
    if (name != x.name)
      continue;
    arguments args{argv + 2, argv + argc};
    if (std::count(x.counts.begin(), x.counts.end(), args.size()) == 0) {
      std::cerr << "usage: cafmq-e2e " << x.name << " " << x.usage << '\n';
      return 2;
    }
    return x.run(args);
  }
  std::cerr << "usage:\n";
  for (auto& x : subcommands)
    std::cerr << "  cafmq-e2e " << x.name << " " << x.usage << '\n';
  return 2;
}
