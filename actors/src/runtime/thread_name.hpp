// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Names the calling thread, so that the stacks of a process that hangs say
// which detached actor a thread runs (CAF names every one "caf.actor").
// Each detached actor calls it first thing: its behaviour is made on its
// own thread. Linux keeps 15 characters.

#include <string>

#include <pthread.h>

namespace cafmq::actors {

inline void name_this_thread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

} // namespace cafmq::actors
