// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The command lines of `cafmq schedule list|add|remove` and `cafmq limit
// list|set|clear` (their commands: schedule_commands.cpp).

#include <functional>
#include <utility>

namespace CLI {
class App;
} // namespace CLI

namespace cafmq::cli {

struct context;

/// The two parent commands that add_scheduling_commands added.
struct scheduling_commands {
  CLI::App* schedule;
  CLI::App* limit;

  /// True if `cmd` is one of them.
  bool owns(const CLI::App* cmd) const {
    return cmd == schedule || cmd == limit;
  }
};

/// Adds `schedule` and `limit` with their subcommands and options to
/// `app`; the function runs the one that was parsed.
std::pair<scheduling_commands, std::function<int(const context&)>>
add_scheduling_commands(CLI::App& app);

} // namespace cafmq::cli
