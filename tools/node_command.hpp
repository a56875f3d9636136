// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// `cafmq node ...`: talks to a runner node through its published control
// interface (see tools/node_command.cpp).

namespace cafmq::cli {

/// Runs `cafmq node` with the arguments after "node"; returns the exit code.
int node_command(int argc, char** argv);

} // namespace cafmq::cli
