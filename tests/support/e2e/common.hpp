// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// What the subcommands of cafmq-e2e share besides their tasks: their entry
// points (one file each, main.cpp dispatches), the files the tests wait
// for, and the way a process reports that it could not start.

#include <string>
#include <vector>

#include <caf/error.hpp>

namespace cafmq::e2e {

/// The arguments after the subcommand's name, as many as its usage allows.
using arguments = std::vector<std::string>;

/// The subcommands, one file each: `run_runner_node` runs `runner-node`.
int run_runner(const arguments& args);
int run_node(const arguments& args);
int run_runner_node(const arguments& args);
int run_worker(const arguments& args);
int run_isolated(const arguments& args);
int run_pickup(const arguments& args);
int run_embedded(const arguments& args);
int run_watches(const arguments& args);

/// Writes `text` to `path` through a hidden file beside it (".NAME") and a
/// rename, so that a test waiting for `path` never reads it half-written.
void publish(const std::string& path, const std::string& text);

/// Returns once `path` exists: how the tests stop a process.
void wait_for_file(const std::string& path);

/// Prints "WHO: ERROR" on stderr and returns 1, the exit code of a process
/// whose runner or worker did not start.
int fail(const std::string& who, const caf::error& err);

} // namespace cafmq::e2e
