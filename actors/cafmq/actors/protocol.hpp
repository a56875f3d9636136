// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The runtime's public protocol: the atoms and actor interfaces that an
// application, another node or a worker uses (the message types are in
// messages.hpp). The interfaces of the runtime's own actors are in
// cafmq/actors/detail/protocol.hpp, which is not installed; together they
// are the table of contents of actors/: who takes what, and what it answers.
// Every message type has an `inspect` overload and is registered by
// `add_message_types`, so any message can cross to another node; a message
// that no interface lists does not compile. actors/README.md draws the
// flow.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "cafmq/actors/messages.hpp"

namespace cafmq::actors {

// -- atoms --------------------------------------------------------------------

///@{
/// An atom of the public protocol: the interfaces below say who sends it,
/// with what, and what it means there.
using renew_atom = caf::atom_constant<caf::atom("renew")>;
using checkpt_atom = caf::atom_constant<caf::atom("checkpt")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using abandon_atom = caf::atom_constant<caf::atom("abandon")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using watch_atom = caf::atom_constant<caf::atom("watch")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using restart_atom = caf::atom_constant<caf::atom("restart")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using event_atom = caf::atom_constant<caf::atom("event")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using exited_atom = caf::atom_constant<caf::atom("exited")>;
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using auth_atom = caf::atom_constant<caf::atom("auth")>;
///@}

// -- actor interfaces ---------------------------------------------------------

/// A task handler implemented as an actor: spawned per attempt and
/// monitored. It answers `true` for success or an error; a cancel, timeout,
/// deadline or shutdown reaches it as (cancel_atom, cancel_reason), and one
/// that ignores it for the handler grace period is killed.
using handler_actor
  = caf::typed_actor<caf::replies_to<run_atom, claimed_task>::with<bool>,
                     caf::reacts_to<cancel_atom, cancel_reason>>;

/// A subscriber to task events (see runtime_actor's subscribe): batches of
/// events in the order the runtime saw them.
using event_actor
  = caf::typed_actor<caf::reacts_to<event_atom, std::vector<task_event>>>;

/// A worker node's side of a joined worker (remote, or a local worker
/// process): runs the attempts the runner sends and reports to its port.
using worker_actor = caf::typed_actor<
  // port: run these (batched like local dispatch).
  caf::reacts_to<run_atom, std::vector<claimed_task>>,
  // port: fire the attempt's token (cancel, timeout, deadline, shutdown).
  caf::reacts_to<cancel_atom, attempt_ref, cancel_reason>,
  // port: the runner leaves; cancel what runs and quit.
  caf::reacts_to<stop_atom>>;

/// A joined worker's port as the worker sees it: where the worker reports
/// the attempts it runs. The runtime's side (detail/protocol.hpp's
/// worker_port_actor) extends it.
using worker_link_actor = caf::typed_actor<
  // worker: attempts ended.
  caf::reacts_to<done_atom, std::vector<task_outcome>>,
  // worker: a handler's checkpoint, and its keep_alive(d).
  caf::replies_to<checkpt_atom, attempt_ref, checkpoint>::with<bool>,
  caf::replies_to<renew_atom, attempt_ref, caf::timespan>::with<bool>>;

/// Receives the events of a watched task: its current state first, then
/// every change, up to a final state; an error ends the stream.
using watcher_actor = caf::typed_actor<caf::reacts_to<status_atom, task_status>,
                                       caf::reacts_to<watch_atom, caf::error>>;

/// A runtime's control interface as other nodes see it: the public part
/// of runtime_actor, nothing internal. A node actor forwards it.
using node_actor = caf::typed_actor<
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
  // Pauses or resumes, cluster-wide and persisted (cafmq.pauses), a kind
  // ("channel" or "task") and name: no runner claims its tasks until it is
  // resumed; running tasks finish. Answers false if nothing changed.
  caf::replies_to<pause_atom, std::string, std::string>::with<bool>,
  caf::replies_to<resume_atom, std::string, std::string>::with<bool>,
  // Spawns a task this runtime knows by name.
  caf::replies_to<spawn_atom, spawn_request>::with<spawn_reply>,
  // Spawns tasks this runtime knows by name in one transaction, all or
  // nothing: a workflow (requests with a workflow id, and parents that are
  // earlier requests with ids of their own, or tasks spawned already).
  // Answers in the order of the requests.
  caf::replies_to<spawn_atom,
                  std::vector<spawn_request>>::with<std::vector<spawn_reply>>,
  // Streams the events that pass the filter to the subscriber until it
  // ends (monitored). Answers true once the subscription is live: every
  // event after the answer reaches the subscriber (false: no subscriber).
  caf::replies_to<subscribe_atom, event_filter, event_actor>::with<bool>,
  // A worker node joins (see worker_actor).
  caf::replies_to<join_atom, worker_offer,
                  worker_actor>::with<worker_link_actor>>;

/// The public face of a runtime: node_actor's interface, plus what the
/// worker processes' supervisor tells it. It forwards each call to the
/// actor that serves it; its supervisor, which restarts those actors, is
/// apart (see detail/supervisor.hpp).
using runtime_actor = node_actor::extend<
  // the worker processes' supervisor: the one with this pid ended (wait
  // status); its attempts fail with it.
  caf::reacts_to<exited_atom, std::int64_t, std::int32_t>>;

/// What a node publishes: a peer proves it knows the shared secret (the
/// answer to the nonce, see node.hpp) and gets the node's handle. With
/// mutual TLS the certificate check comes first.
using gate_actor
  = caf::typed_actor<caf::replies_to<hello_atom>::with<std::string>,
                     caf::replies_to<auth_atom, std::string>::with<node_actor>>;

/// Registers every message type of the runtime in `cfg`, under the same
/// names on every node. Call it in the config of every actor system that
/// runs or talks to a runtime (`spawn_runner` does not do it for you: a
/// config is immutable once the system runs).
void add_message_types(caf::actor_system_config& cfg);

} // namespace cafmq::actors
