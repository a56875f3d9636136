#pragma once

// Atoms and message types of the runtime. The runtime's messages stay inside
// one process, so its structs are allowed as unsafe (non-serializable) types.

#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include "cafmq/actors/runner_config.hpp"
#include "cafmq/cancellation.hpp"
#include "cafmq/claimed_task.hpp"
#include "cafmq/queue_connection.hpp"

namespace cafmq::actors {

/// runner → database: connect now and load what writes need.
using open_atom = caf::atom_constant<caf::atom("open")>;
/// dispatcher → database: claim a batch (claim_request) → claim_result.
using claim_atom = caf::atom_constant<caf::atom("claim")>;
/// completer → database: record a write_batch → true.
using record_atom = caf::atom_constant<caf::atom("record")>;
/// dispatcher → database: renew leases → std::vector<lease_state>.
using renew_atom = caf::atom_constant<caf::atom("renew")>;
/// backend → database: checkpoint one attempt → true or stale error.
using checkpt_atom = caf::atom_constant<caf::atom("checkpt")>;
/// listener → dispatcher: a channel has new work (payload: channel name).
using ready_atom = caf::atom_constant<caf::atom("ready")>;
/// listener → dispatcher: notifications may have been lost; claim again.
using rescan_atom = caf::atom_constant<caf::atom("rescan")>;
/// timer: time to claim (with a generation number).
using poll_atom = caf::atom_constant<caf::atom("poll")>;
/// timer: time to renew leases.
using tick_atom = caf::atom_constant<caf::atom("tick")>;
/// dispatcher → channel → pool: run claimed attempts (a vector each hop);
/// pool → worker or handler actor: run one claimed attempt.
using run_atom = caf::atom_constant<caf::atom("run")>;
/// Attempts ended: worker → pool (task_outcome), pool → channel (a vector of
/// attempt_ref), pool → dispatcher → completer (a vector of task_outcome).
using done_atom = caf::atom_constant<caf::atom("done")>;
/// executor job → pool: outcomes wait in the shared box.
using collect_atom = caf::atom_constant<caf::atom("collect")>;
/// dispatcher → completer: wait until every outcome is written.
using flush_atom = caf::atom_constant<caf::atom("flush")>;
/// completer → dispatcher: (written_atom, std::vector<attempt_ref>) these
/// outcomes are in the database now.
using written_atom = caf::atom_constant<caf::atom("written")>;
/// anyone → dispatcher: graceful stop; replies when done. dispatcher →
/// channels and pool: give back every attempt that has not started.
using stop_atom = caf::atom_constant<caf::atom("stop")>;
/// timer: the graceful stop ran out of time.
using timeout_atom = caf::atom_constant<caf::atom("timeout")>;
/// listener → dispatcher: (cancel_atom, std::string id) a cancel was requested;
/// dispatcher → pool: (cancel_atom, attempt_ref, cancel_reason) fire the token;
/// pool → handler actor: (cancel_atom, cancel_reason).
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
/// timer in the pool: (deadline_atom, uuid, attempt, cancel_reason).
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
/// maintenance → database: (prune_atom, retention, limit) → deleted or -1.
using prune_atom = caf::atom_constant<caf::atom("prune")>;
/// maintenance → database: (expire_atom, limit) → removed reservations.
using expire_atom = caf::atom_constant<caf::atom("expire")>;
/// channel → dispatcher: may I retire? → bool.
using retire_atom = caf::atom_constant<caf::atom("retire")>;
/// anyone → dispatcher: counters → runner_stats.
using stats_atom = caf::atom_constant<caf::atom("stats")>;

/// How an attempt ended, as the worker saw it.
struct task_outcome {
  enum kind_t {
    /// The handler succeeded: record completion.
    completed,
    /// Already written in the handler's own transaction: nothing to record.
    recorded,
    /// The handler failed: record the failure.
    failed,
    /// Never started (the runner is stopping): give the attempt back.
    released,
  };
  attempt_ref ref;
  kind_t kind = completed;
  std::string error;
  bool retryable = true;
};

/// Outcomes to write in one transaction.
struct write_batch {
  std::vector<attempt_ref> completed;
  std::vector<attempt_failure> failed;
  std::vector<attempt_ref> released;

  bool empty() const noexcept {
    return completed.empty() && failed.empty() && released.empty();
  }
};

} // namespace cafmq::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::claim_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::claim_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::claimed_task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::attempt_ref)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::checkpoint)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::uuid)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::cancel_reason)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<cafmq::cancellation>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<cafmq::attempt_ref>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<cafmq::lease_state>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::actors::task_outcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<cafmq::claimed_task>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<cafmq::actors::task_outcome>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::actors::write_batch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmq::actors::runner_stats)
