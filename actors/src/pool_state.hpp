#pragma once

// The pool's state and the parts of it that run handler actors
// (handler_actors.cpp); pool.cpp has the rest. Internal to the pool.

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "cafmq/actors/context.hpp"
#include "cafmq/actors/protocol.hpp"
#include "executor.hpp"

namespace cafmq::actors::pool_impl {

struct running_attempt {
  channel_actor owner;
  std::shared_ptr<cancellation> token;
  failure_filter filter;
  // A handler actor's handle; invalid for function handlers.
  handler_actor handler;
  // A handler actor's failed answer, reported when its down message tells
  // more (the exit reason).
  caf::error pending;
  // Queued in or running on the executor.
  bool pooled = false;
};

using running_map = std::unordered_map<attempt_ref, running_attempt>;

struct outcome_box {
  std::mutex mtx;
  std::vector<task_outcome> items;

  // Adds an outcome; true if the box was empty (then the pool needs telling).
  bool put(task_outcome x) {
    std::lock_guard<std::mutex> guard{mtx};
    items.push_back(std::move(x));
    return items.size() == 1;
  }

  std::vector<task_outcome> take() {
    std::vector<task_outcome> result;
    std::lock_guard<std::mutex> guard{mtx};
    result.swap(items);
    return result;
  }
};

struct pool_state {
  context_ptr ctx;
  std::shared_ptr<executor> exec;
  database_actor db;
  // Shared with the exit hook, which fires every token however we end.
  std::shared_ptr<running_map> running = std::make_shared<running_map>();
  // Attempts on the scheduler (inline and actor handlers).
  int scheduled = 0;
  // Inline and actor attempts waiting for a slot.
  std::deque<std::pair<claimed_task, channel_actor>> waiting;
  std::shared_ptr<outcome_box> outbox = std::make_shared<outcome_box>();
  // What this message produced, sent when it is handled: one message per
  // owner, one post to the executor.
  std::vector<std::pair<channel_actor, std::vector<task_outcome>>> to_owners;
  std::vector<executor::job> to_executor;
  bool stopping = false;
  static inline const char* name = "cafmq.pool";
};

using pool_ptr = pool_actor::stateful_pointer<pool_state>;

/// Registers an attempt that starts executing for `owner`; returns its
/// record.
running_attempt& add_running(pool_ptr self, const claimed_task& task,
                             channel_actor owner);

/// Queues an outcome for its owner (sent by `flush`).
void add_outcome(pool_ptr self, const channel_actor& owner,
                 task_outcome outcome);

/// Reports an ended attempt once; later reports of it are ignored.
void report(pool_ptr self, task_outcome outcome);

/// Sends what the current message produced.
void flush(pool_ptr self);

/// Arms the attempt's timeout, which counts from its start.
void arm_timeout(const claimed_task& task, const channel_actor& owner);

/// Spawns and monitors the handler actor of one attempt.
void run_actor_handler(pool_ptr self, const actor_task_definition& def,
                       claimed_task task, channel_actor owner);

/// A handler actor ended: if it had not answered, its attempt failed.
void handler_down(pool_ptr self, const caf::down_msg& msg);

/// The grace period after a cancel passed: kill a handler actor that has
/// not answered.
void kill_handler(pool_ptr self, const attempt_ref& ref);

} // namespace cafmq::actors::pool_impl
