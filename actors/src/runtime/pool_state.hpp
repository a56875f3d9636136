// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The pool's state and the parts of it that run handler actors
// (handler_actors.cpp) and end attempts early (pool_endings.cpp); pool.cpp
// has the rest. Internal to the pool.

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "cafmq/actors/detail/context.hpp"
#include "cafmq/actors/detail/protocol.hpp"
#include "runtime/executor.hpp"
#include "runtime/outcome_box.hpp"
#include "runtime/owners.hpp"
#include "runtime/started_attempts.hpp"

namespace cafmq::actors::pool_impl {

struct running_attempt {
  channel_actor owner;
  // The task's name, for the log.
  std::string name;
  std::shared_ptr<cancellation> token;
  // Its task's failure filter, a part of the runtime context's config.
  const failure_filter* filter = nullptr;
  // A handler actor's handle; invalid for function handlers.
  handler_actor handler;
  // A handler actor's failed answer, reported when its down message tells
  // more (the exit reason).
  caf::error pending;
  // Queued in or running on the executor.
  bool pooled = false;
  // Its task's metrics; and when its handler started (not pooled: an
  // executor thread times those).
  runtime_metrics::task_instruments* metrics = nullptr;
  std::chrono::steady_clock::time_point started;
};

using running_map = std::unordered_map<attempt_ref, running_attempt>;

// What the executor's jobs share (see `post` in pool.cpp).
struct job_env {
  pool_actor pool;
  caf::actor_system& sys;
  context_ptr ctx;
  std::shared_ptr<started_attempts> started;
  // The database actor, weakly: see `post`.
  caf::weak_actor_ptr db;
  std::shared_ptr<outcome_box> box;
  std::shared_ptr<executor::gate> gate;
};

using waiting_list = std::deque<std::pair<claimed_task, channel_actor>>;

struct pool_state {
  context_ptr ctx;
  std::shared_ptr<executor> exec;
  database_actor db;
  // Shared with executor threads (which add what they start), the session
  // (which records it) and the metrics.
  std::shared_ptr<started_attempts> started;
  // Shared with the exit hook, which fires every token however we end.
  std::shared_ptr<running_map> running = std::make_shared<running_map>();
  // Attempts on the scheduler (inline and actor handlers).
  int scheduled = 0;
  // Inline and actor attempts waiting for a slot.
  waiting_list waiting;
  std::shared_ptr<outcome_box> outbox = std::make_shared<outcome_box>();
  // The monitored owners, and the outcomes this message owes them.
  actors::owners owners;
  // What the executor's jobs share; made at the first post, and again after
  // the database actor changed. It holds this pool's own handle: CAF
  // destroys the state when the pool exits, which lets it go.
  std::shared_ptr<const job_env> env;
  // What this message posts to the executor, in one post.
  std::vector<executor::job> to_executor;
  bool stopping = false;
  static inline const char* name = "cafmq.pool";
};

using pool_ptr = pool_actor::stateful_pointer<pool_state>;

/// Registers an attempt that starts executing for `owner` (or, `pooled`,
/// waits for an executor thread); returns its record.
running_attempt& add_running(pool_ptr self, const claimed_task& task,
                             channel_actor owner, bool pooled = false);

/// Queues an outcome for its owner (sent by `flush`).
void add_outcome(pool_ptr self, const channel_actor& owner,
                 task_outcome outcome);

/// Reports an ended attempt once; later reports of it are ignored.
void report(pool_ptr self, task_outcome outcome);

/// Sends what the current message produced.
void flush(pool_ptr self);

/// Spawns and monitors the handler actor of one attempt.
void run_actor_handler(pool_ptr self, const actor_task_definition& def,
                       claimed_task task, channel_actor owner);

/// A handler actor ended: if it had not answered, its attempt failed.
void handler_down(pool_ptr self, const caf::down_msg& msg);

// pool_endings.cpp: attempts that end early.

/// Fires the token of a running attempt (reason `why`); a handler actor
/// also gets the cancel and, after handler_grace, the kill.
void fire(pool_ptr self, const attempt_ref& ref, running_attempt& x,
          cancel_reason why);

/// An owner ended: its attempts are cancelled (reason lost) and what they
/// return goes nowhere; false if `msg` was not about an owner.
bool owner_down(pool_ptr self, const caf::down_msg& msg);

/// The stop's bound passed: function handlers still running are abandoned,
/// their attempts handed back.
void abandon_handlers(pool_ptr self);

/// The grace period after a cancel passed: kill a handler actor that has
/// not answered.
void kill_handler(pool_ptr self, const attempt_ref& ref);

} // namespace cafmq::actors::pool_impl
