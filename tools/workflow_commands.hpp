// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The `cafmq workflow` commands.

#include <functional>
#include <utility>

namespace CLI {
class App;
} // namespace CLI

namespace cafmq::cli {

struct context;

/// Adds `workflow show|cancel|retry ID` to `app`; returns the command and
/// what runs it once parsed.
std::pair<CLI::App*, std::function<int(const context&)>>
add_workflow_commands(CLI::App& app);

} // namespace cafmq::cli
