#pragma once

// The runtime's protocol: every atom, message type and actor interface. Read
// it as the table of contents of actors/: who takes what, and what it
// answers. Every message type has an `inspect` overload and is registered by
// `add_message_types`, so any message can cross to another node; a message
// that no interface lists does not compile. actors/README.md draws the flow.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "cafmq/cancellation.hpp"
#include "cafmq/checkpoint.hpp"
#include "cafmq/claimed_task.hpp"
#include "cafmq/queue_connection.hpp"
#include "cafmq/task_status.hpp"

namespace cafmq::actors {

// -- atoms --------------------------------------------------------------------

using claim_atom = caf::atom_constant<caf::atom("claim")>;
using record_atom = caf::atom_constant<caf::atom("record")>;
using renew_atom = caf::atom_constant<caf::atom("renew")>;
using checkpt_atom = caf::atom_constant<caf::atom("checkpt")>;
using prune_atom = caf::atom_constant<caf::atom("prune")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using rescan_atom = caf::atom_constant<caf::atom("rescan")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using written_atom = caf::atom_constant<caf::atom("written")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using abandon_atom = caf::atom_constant<caf::atom("abandon")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
using kill_atom = caf::atom_constant<caf::atom("kill")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using channels_atom = caf::atom_constant<caf::atom("channels")>;
using peers_atom = caf::atom_constant<caf::atom("peers")>;
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using watch_atom = caf::atom_constant<caf::atom("watch")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using restart_atom = caf::atom_constant<caf::atom("restart")>;
using poll_atom = caf::atom_constant<caf::atom("poll")>;

// -- message types
// --------------------------------------------------------------

/// How an attempt ended, as its executor saw it.
struct task_outcome {
  enum kind_t : std::uint8_t {
    /// The handler succeeded: record completion.
    completed,
    /// Nothing to write: completed in the handler's own transaction, or the
    /// attempt is no longer ours (lost lease).
    recorded,
    /// The handler failed: record the failure.
    failed,
    /// Never started, or interrupted by this runner's stop: give it back
    /// (pending again at once, the attempt not counted).
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

/// What a channel's owner tells the dispatcher when attempts leave the
/// handler slots.
struct finished_counts {
  std::int32_t completed = 0;
  std::int32_t failed = 0;
  std::int32_t released = 0;
  /// Ended without an outcome to write (lost lease, own transaction).
  std::int32_t recorded = 0;

  std::int32_t total() const noexcept {
    return completed + failed + released + recorded;
  }
};

/// Counters of one runtime.
struct runner_stats {
  /// Attempts held: claimed and not yet out of their handler.
  std::int32_t running = 0;
  /// Channel actors alive.
  std::int32_t channels = 0;
  std::int64_t claimed = 0;
  std::int64_t completed = 0;
  std::int64_t failed = 0;
  /// Claimed attempts given back unstarted (or interrupted by a stop).
  std::int64_t released = 0;
  std::int64_t claims = 0;
  /// Cancels that reached attempts through a lease renewal (their
  /// notification was missed).
  std::int64_t cancels_at_renewal = 0;
  /// Attempts this runner lost (lease renewal no longer owned them).
  std::int64_t lost = 0;
  /// Children restarted by the supervisor.
  std::int64_t restarts = 0;
};

// -- actor interfaces ---------------------------------------------------------

/// A task handler implemented as an actor: spawned per attempt and
/// monitored. It answers `true` for success or an error; a cancel, timeout,
/// deadline or shutdown reaches it as (cancel_atom, cancel_reason), and one
/// that ignores it for the handler grace period is killed.
using handler_actor
  = caf::typed_actor<caf::replies_to<run_atom, claimed_task>::with<bool>,
                     caf::reacts_to<cancel_atom, cancel_reason>>;

/// One libpqxx connection, owned by one detached actor.
using database_actor = caf::typed_actor<
  caf::replies_to<claim_atom, claim_request>::with<claim_result>,
  caf::replies_to<record_atom, write_batch>::with<bool>,
  caf::replies_to<renew_atom, std::vector<attempt_ref>,
                  caf::timespan>::with<std::vector<lease_state>>,
  caf::replies_to<checkpt_atom, attempt_ref, checkpoint>::with<bool>,
  caf::replies_to<prune_atom, caf::timespan, std::int32_t>::with<std::int64_t>,
  caf::replies_to<expire_atom, std::int32_t>::with<std::int64_t>,
  caf::replies_to<cancel_atom, uuid>::with<std::string>,
  caf::replies_to<status_atom, uuid>::with<task_status>>;

/// Runs one non-blocking handler on the scheduler, then quits.
using job_actor = caf::typed_actor<caf::reacts_to<run_atom>>;

/// Executes attempts and reports each outcome to its owner: the channel
/// actor that sent them.
using pool_actor = caf::typed_actor<
  // owner: run these (they passed the channel's rules).
  caf::reacts_to<run_atom, std::vector<claimed_task>>,
  // owner: fire the attempt's token, or end it if it has not started.
  caf::reacts_to<cancel_atom, attempt_ref, cancel_reason>,
  // executor threads: outcomes wait in the shared box.
  caf::reacts_to<collect_atom>,
  // an inline job (non-blocking handler) ended.
  caf::reacts_to<done_atom, task_outcome>,
  // own timer: a handler actor ignored its cancel for the grace period.
  caf::reacts_to<kill_atom, attempt_ref>,
  // runtime: a new write database (checkpoints and keep-alives).
  caf::reacts_to<peers_atom, database_actor>,
  // the runtime stops: give back what waits for a thread.
  caf::reacts_to<stop_atom>>;

/// Writes outcomes in batches (group commit) and tells each owner (the
/// channel actor that sent them) once they are in the database.
using completer_actor
  = caf::typed_actor<caf::reacts_to<record_atom, std::vector<task_outcome>>,
                     caf::replies_to<flush_atom>::with<bool>,
                     caf::reacts_to<peers_atom, database_actor>,
                     // own timer: retry a failed write.
                     caf::reacts_to<retry_atom>>;

/// The owner of every attempt of one (channel name, args) in this runtime,
/// from claim to written outcome.
using channel_actor = caf::typed_actor<
  // dispatcher: attempts of one claim, in claim order.
  caf::reacts_to<run_atom, std::vector<claimed_task>>,
  // dispatcher or keeper: the task's attempt here ends (cancel, lost lease).
  caf::reacts_to<cancel_atom, uuid, cancel_reason>,
  // timer or executor: an attempt reached its timeout or deadline.
  caf::reacts_to<deadline_atom, attempt_ref, cancel_reason>,
  // pool: handlers ended.
  caf::reacts_to<done_atom, std::vector<task_outcome>>,
  // completer: these outcomes are in the database.
  caf::reacts_to<written_atom, std::vector<attempt_ref>>,
  // keeper: the attempts whose leases to renew.
  caf::replies_to<renew_atom>::with<std::vector<attempt_ref>>,
  // keeper: attempts no longer owned.
  caf::reacts_to<lost_atom, std::vector<attempt_ref>>,
  // dispatcher: the pool or completer was restarted.
  caf::reacts_to<peers_atom, pool_actor>,
  caf::reacts_to<peers_atom, completer_actor>,
  // dispatcher: pause (true) or resume (false) starting attempts.
  caf::reacts_to<pause_atom, bool>,
  // dispatcher: the runtime stops; give back what has not started.
  caf::reacts_to<stop_atom>,
  // dispatcher: the shutdown timeout passed; cancel what runs.
  caf::reacts_to<abandon_atom>,
  // own timer: idle since this generation.
  caf::reacts_to<idle_atom, std::uint64_t>>;

/// Decides when and how much to claim, and routes attempts and cancels to
/// their channel actors.
using dispatcher_actor = caf::typed_actor<
  // listener: a channel name has new work.
  caf::reacts_to<ready_atom, std::string>,
  // listener, completer: claim now.
  caf::reacts_to<rescan_atom>,
  // listener: a cancel was requested for a task of (name, args).
  caf::reacts_to<cancel_atom, std::string, std::string, uuid>,
  // own timer of this generation.
  caf::reacts_to<wake_atom, std::uint64_t>,
  // a channel: attempts left their handlers.
  caf::reacts_to<done_atom, std::string, finished_counts>,
  // an idle channel: may it quit?
  caf::replies_to<retire_atom, std::string>::with<bool>,
  // keeper: the channels to ask for leases.
  caf::replies_to<channels_atom>::with<std::vector<channel_actor>>,
  caf::reacts_to<pause_atom, std::string, bool>,
  // runtime: a restarted sibling (claim database, pool, completer).
  caf::reacts_to<peers_atom, database_actor>,
  caf::reacts_to<peers_atom, pool_actor>,
  caf::reacts_to<peers_atom, completer_actor>,
  // runtime: stop claiming, give back what has not started; answers when
  // no attempt is held.
  caf::replies_to<drain_atom>::with<bool>,
  // runtime: the shutdown timeout passed.
  caf::reacts_to<abandon_atom>,
  caf::replies_to<stats_atom>::with<runner_stats>>;

/// Renews the leases of every attempt the channels own, in one statement
/// per interval.
using keeper_actor
  = caf::typed_actor<caf::reacts_to<tick_atom>,
                     caf::reacts_to<peers_atom, database_actor>,
                     caf::reacts_to<peers_atom, dispatcher_actor>,
                     // its counters: cancels_at_renewal and lost.
                     caf::replies_to<stats_atom>::with<runner_stats>>;

/// Prunes finished tasks and expires reservations.
using maintenance_actor
  = caf::typed_actor<caf::reacts_to<tick_atom>,
                     caf::reacts_to<peers_atom, database_actor>>;

/// Turns notifications into dispatcher messages; its own poll loop.
using listener_actor
  = caf::typed_actor<caf::reacts_to<poll_atom>,
                     caf::reacts_to<peers_atom, dispatcher_actor>>;

/// Receives the events of a watched task: its current state first, then
/// every change, up to a final state; an error ends the stream.
using watcher_actor = caf::typed_actor<caf::reacts_to<status_atom, task_status>,
                                       caf::reacts_to<watch_atom, caf::error>>;

/// The public face of a runtime: the supervisor of its actors.
using runtime_actor = caf::typed_actor<
  // Graceful stop; answers when every outcome is written (or the bound
  // passed).
  caf::replies_to<stop_atom>::with<bool>,
  caf::replies_to<stats_atom>::with<runner_stats>,
  // Cancels a task anywhere; answers what happened ("cancelled" or
  // "requested").
  caf::replies_to<cancel_atom, uuid>::with<std::string>,
  caf::replies_to<status_atom, uuid>::with<task_status>,
  // Streams the task's states to the watcher.
  caf::reacts_to<watch_atom, uuid, watcher_actor>,
  // Pauses or resumes a channel name in this runtime.
  caf::replies_to<pause_atom, std::string>::with<bool>,
  caf::replies_to<resume_atom, std::string>::with<bool>,
  // own timers: the watchdog over database calls; the shutdown timeout.
  caf::reacts_to<tick_atom>, caf::reacts_to<abandon_atom>,
  // the dispatcher restarted a crashed channel actor.
  caf::reacts_to<restart_atom, std::string>,
  // a database actor lost its connection (true) or got it back (false).
  caf::reacts_to<lost_atom, bool>>;

// -- inspect ------------------------------------------------------------------

namespace detail {

// std::optional is not serializable in CAF 0.17: these go through
// caf::optional copies.
template <class T>
caf::optional<T> to_caf(const std::optional<T>& x) {
  return x ? caf::optional<T>{*x} : caf::optional<T>{};
}

template <class T>
std::optional<T> from_caf(const caf::optional<T>& x) {
  return x ? std::optional<T>{*x} : std::optional<T>{};
}

} // namespace detail

} // namespace cafmq::actors

namespace cafmq {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, uuid& x) {
  auto bytes = x.bytes();
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x = uuid{bytes};
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::uuid"), bytes, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_ref& x) {
  return f(caf::meta::type_name("cafmq::attempt_ref"), x.id, x.attempt);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt_failure& x) {
  return f(caf::meta::type_name("cafmq::attempt_failure"), x.ref, x.error,
           x.retryable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claimed_task& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto timeout = to_caf(x.timeout);
  auto deadline_in = to_caf(x.deadline_in);
  auto json = to_caf(x.payload_json);
  auto bytes = to_caf(x.payload_bytes);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.timeout = from_caf(timeout);
    x.deadline_in = from_caf(deadline_in);
    x.payload_json = from_caf(json);
    x.payload_bytes = from_caf(bytes);
    return caf::none;
  });
  // `received` is this process's steady clock: it does not travel.
  return f(caf::meta::type_name("cafmq::claimed_task"), x.id, x.name,
           x.channel_name, x.channel_args, x.attempt, x.max_attempts, x.ordered,
           timeout, deadline_in, json, bytes, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_request& x) {
  return f(caf::meta::type_name("cafmq::claim_request"), x.node, x.names,
           x.channels, x.limit, x.lease, x.max_lost, x.paused);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, claim_result& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto name = to_caf(x.cursor.channel_name);
  auto args = to_caf(x.cursor.channel_args);
  auto wait = to_caf(x.wait);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.cursor.channel_name = from_caf(name);
    x.cursor.channel_args = from_caf(args);
    x.wait = from_caf(wait);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::claim_result"), x.tasks, name, args,
           wait, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lease_state& x) {
  return f(caf::meta::type_name("cafmq::lease_state"), x.id,
           x.cancel_requested);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto json = to_caf(x.raw_json());
  auto bytes = to_caf(x.bytes());
  auto retries = x.extra_retries();
  auto lease = to_caf(x.keep_alive());
  auto load = caf::meta::load_callback([&]() -> caf::error {
    checkpoint result;
    if (json)
      result.raw_json(*json);
    if (bytes)
      result.bytes(*bytes);
    result.extra_retries(retries);
    if (lease)
      result.keep_alive(*lease);
    x = std::move(result);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::checkpoint"), json, bytes, retries,
           lease, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_status& x) {
  using actors::detail::from_caf;
  using actors::detail::to_caf;
  auto last_error = to_caf(x.last_error);
  auto node = to_caf(x.node);
  auto started = to_caf(x.started_at);
  auto finished = to_caf(x.finished_at);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.last_error = from_caf(last_error);
    x.node = from_caf(node);
    x.started_at = from_caf(started);
    x.finished_at = from_caf(finished);
    return caf::none;
  });
  return f(caf::meta::type_name("cafmq::task_status"), x.state, x.name,
           x.channel_name, x.channel_args, x.attempt, x.max_attempts,
           last_error, x.cancel_requested, node, x.created_at, x.run_at,
           started, finished, load);
}

} // namespace cafmq

namespace cafmq::actors {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_outcome& x) {
  return f(caf::meta::type_name("cafmq::task_outcome"), x.ref, x.kind, x.error,
           x.retryable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_batch& x) {
  return f(caf::meta::type_name("cafmq::write_batch"), x.completed, x.failed,
           x.released);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finished_counts& x) {
  return f(caf::meta::type_name("cafmq::finished_counts"), x.completed,
           x.failed, x.released, x.recorded);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, runner_stats& x) {
  return f(caf::meta::type_name("cafmq::runner_stats"), x.running, x.channels,
           x.claimed, x.completed, x.failed, x.released, x.claims,
           x.cancels_at_renewal, x.lost, x.restarts);
}

/// Registers every message type of the runtime in `cfg`, under the same
/// names on every node. Call it in the config of every actor system that
/// runs or talks to a runtime (`spawn_runner` does not do it for you: a
/// config is immutable once the system runs).
void add_message_types(caf::actor_system_config& cfg);

} // namespace cafmq::actors
