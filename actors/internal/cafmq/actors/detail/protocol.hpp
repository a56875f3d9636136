// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The runtime's internal protocol: the atoms and interfaces of its own
// actors (database, pool, router, completer, channels, dispatcher, keeper,
// maintenance, listener, event hub, worker ports). Not installed; the public
// part, which every interface here builds on, is cafmq/actors/protocol.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "cafmq/actors/detail/messages.hpp"
#include "cafmq/actors/protocol.hpp"

namespace cafmq::actors {

// -- atoms --------------------------------------------------------------------

///@{
/// An atom of the internal protocol: the interfaces below say who sends it,
/// with what, and what it means there.
using claim_atom = caf::atom_constant<caf::atom("claim")>;
using record_atom = caf::atom_constant<caf::atom("record")>;
using prune_atom = caf::atom_constant<caf::atom("prune")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using rescan_atom = caf::atom_constant<caf::atom("rescan")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using collect_atom = caf::atom_constant<caf::atom("collect")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using retry_atom = caf::atom_constant<caf::atom("retry")>;
using written_atom = caf::atom_constant<caf::atom("written")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
using kill_atom = caf::atom_constant<caf::atom("kill")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;
using channels_atom = caf::atom_constant<caf::atom("channels")>;
using peers_atom = caf::atom_constant<caf::atom("peers")>;
using poll_atom = caf::atom_constant<caf::atom("poll")>;
using offer_atom = caf::atom_constant<caf::atom("offer")>;
using hold_atom = caf::atom_constant<caf::atom("hold")>;
using unhold_atom = caf::atom_constant<caf::atom("unhold")>;
using schedule_atom = caf::atom_constant<caf::atom("schedule")>;
using events_atom = caf::atom_constant<caf::atom("events")>;
using upkeep_atom = caf::atom_constant<caf::atom("upkeep")>;
using vacuum_atom = caf::atom_constant<caf::atom("vacuum")>;
///@}

// -- actor interfaces ---------------------------------------------------------

/// The runtime's event hub as its emitters and subscribers see it:
/// channels and the admin database send it events (only while someone
/// subscribes), subscribers get the ones their filter passes. A spawn being
/// written holds its task's events (hold_atom) until its `spawned` event comes,
/// or abandon_atom says that none will.
using event_sink_actor = event_actor::extend<
  caf::replies_to<subscribe_atom, event_filter, event_actor>::with<bool>,
  caf::reacts_to<hold_atom, uuid>, caf::reacts_to<abandon_atom, uuid>>;

/// Told where events go: the hub while someone subscribes, an invalid
/// handle while nobody does (the dispatcher, each channel, the face).
using events_listener_actor
  = caf::typed_actor<caf::reacts_to<events_atom, event_sink_actor>>;

/// The event hub, with what the supervisor tells it: the dispatcher (at
/// start and after a restart), which it tells where events go.
using event_hub_actor
  = event_sink_actor::extend<caf::reacts_to<peers_atom, events_listener_actor>>;

/// One libpqxx connection, owned by one detached actor.
using database_actor = caf::typed_actor<
  caf::replies_to<claim_atom, claim_request>::with<claim_result>,
  caf::replies_to<record_atom, write_batch>::with<write_report>,
  caf::replies_to<renew_atom, std::vector<attempt_ref>,
                  caf::timespan>::with<std::vector<lease_state>>,
  caf::replies_to<checkpt_atom, attempt_ref, checkpoint>::with<bool>,
  caf::replies_to<prune_atom, caf::timespan, std::int32_t>::with<std::int64_t>,
  caf::replies_to<expire_atom, std::int32_t>::with<std::int64_t>,
  // maintenance: how long the database's oldest snapshot has been held, in
  // ms; -1: none.
  caf::replies_to<upkeep_atom>::with<std::int64_t>,
  // maintenance: vacuum the live table; answers the indexes over this many
  // bytes that are worth rebuilding (cafmq::vacuum_live_table).
  caf::replies_to<upkeep_atom, std::int64_t>::with<std::vector<std::string>>,
  // maintenance: rebuild this index of the live table; answers its bytes.
  caf::replies_to<upkeep_atom, std::string>::with<std::int64_t>,
  // maintenance: vacuum the live table if it has at least this many dead
  // row versions and vacuum can remove some; answers whether it did
  // (cafmq::vacuum_live_table_if_due).
  caf::replies_to<vacuum_atom, std::int64_t>::with<bool>,
  caf::replies_to<cancel_atom, uuid>::with<std::string>,
  // runtime, while someone subscribes to events: the same, and a
  // `cancelled` event to the hub when the task was cancelled before it ran.
  caf::replies_to<cancel_atom, uuid, event_sink_actor>::with<std::string>,
  caf::replies_to<status_atom, uuid>::with<task_status>,
  // runtime: pause (true) or resume a channel or task name cluster-wide.
  caf::replies_to<pause_atom, std::string, std::string, bool>::with<bool>,
  // maintenance: fire the due schedules (registering the task definitions'
  // schedules first, once); answers the tasks spawned.
  caf::replies_to<schedule_atom>::with<std::int32_t>,
  // runtime: spawn a task by name from its definition's defaults (the
  // definitions are in the runtime context); while someone subscribes to
  // events (the hub is valid), its `spawned` event to the hub (which holds
  // the task's other events until then).
  caf::replies_to<spawn_atom, spawn_request,
                  event_sink_actor>::with<spawn_reply>,
  // runtime: spawn many by name, all or nothing; the hub as above.
  caf::replies_to<spawn_atom, std::vector<spawn_request>,
                  event_sink_actor>::with<std::vector<spawn_reply>>,
  // runtime: direct dispatch: spawn by name as above and, in the same
  // transaction, claim the task as the dispatcher's claim_request says;
  // answers the spawn and what the claim took.
  caf::replies_to<spawn_atom, spawn_request, event_sink_actor,
                  claim_request>::with<spawn_reply, claim_result>>;

/// Runs one non-blocking handler on the scheduler, then quits.
using job_actor = caf::typed_actor<caf::reacts_to<run_atom>>;

/// The runner's side of one joined worker: spawned by the router, it owns the
/// attempts sent to the worker, monitors the worker actor and fences
/// everything it sends back by (id, attempt). The worker sees its
/// worker_link_actor part.
using worker_port_actor = worker_link_actor::extend<
  // router: run these on the worker.
  caf::reacts_to<run_atom, std::vector<claimed_task>>,
  // router: cancel an attempt the worker holds.
  caf::reacts_to<cancel_atom, attempt_ref, cancel_reason>,
  // router: a new write database.
  caf::reacts_to<peers_atom, database_actor>,
  // router: the worker's process ended with this wait status (isolation).
  caf::reacts_to<exited_atom, std::int32_t>,
  // own timer: the worker's process left without a status; fail its
  // attempts anyway.
  caf::reacts_to<lost_atom>,
  // router: the runtime stops.
  caf::reacts_to<stop_atom>>;

/// Learns which task names joined workers offer and their total capacity:
/// the dispatcher as the router sees it (declared apart because the
/// dispatcher's interface names the router's).
using offer_listener_actor = caf::typed_actor<
  caf::reacts_to<offer_atom, std::vector<std::string>, std::int32_t>>;

/// Runs attempts for their owners, the channel actors that send them, and
/// reports each outcome to its owner; monitors each owner, and drops what
/// a dead owner's attempts return. A channel sends an attempt to the pool
/// if a handler of its name runs here, else to the router.
using attempt_runner_actor = caf::typed_actor<
  // owner: run these (they passed the channel's rules).
  caf::reacts_to<run_atom, std::vector<claimed_task>>,
  // owner: fire the attempt's token, or end it if it has not started.
  caf::reacts_to<cancel_atom, attempt_ref, cancel_reason>,
  // dispatcher: the runtime stops; give back what has not started.
  caf::reacts_to<stop_atom>>;

/// Runs attempts here: function handlers on the executor, non-blocking
/// and actor handlers on the scheduler.
using pool_actor = attempt_runner_actor::extend<
  // executor threads: outcomes wait in the shared box.
  caf::reacts_to<collect_atom>,
  // an inline job (non-blocking handler) ended.
  caf::reacts_to<done_atom, task_outcome>,
  // own timer: a handler actor ignored its cancel for the grace period.
  caf::reacts_to<kill_atom, attempt_ref>,
  // runtime: the stop's bound passed; function handlers still running are
  // no longer waited for, and their attempts are handed back.
  caf::reacts_to<abandon_atom>,
  // runtime: a new write database (checkpoints and keep-alives).
  caf::reacts_to<peers_atom, database_actor>>;

/// Places attempts on joined workers (worker nodes, worker processes).
using router_actor = attempt_runner_actor::extend<
  // runtime: a new write database (the workers' checkpoints).
  caf::reacts_to<peers_atom, database_actor>,
  // runtime: the dispatcher, told what joined workers offer (at start and
  // after a restart of either).
  caf::reacts_to<peers_atom, offer_listener_actor>,
  // runtime: a worker node joins; answers the port it talks to.
  caf::replies_to<join_atom, worker_offer,
                  worker_actor>::with<worker_link_actor>,
  // a worker port: attempts on its worker ended.
  caf::reacts_to<done_atom, std::vector<task_outcome>>,
  // a worker port: its worker was lost; every attempt it held failed (the
  // router gives back those that had not started: held ahead).
  caf::reacts_to<lost_atom, std::vector<task_outcome>>,
  // runtime: the worker process with this pid ended (wait status).
  caf::reacts_to<exited_atom, std::int64_t, std::int32_t>>;

/// Writes outcomes in batches (group commit) and tells each owner (the
/// channel actor that sent them) once they are in the database.
using completer_actor
  = caf::typed_actor<caf::reacts_to<record_atom, std::vector<task_outcome>>,
                     caf::replies_to<flush_atom>::with<bool>,
                     caf::reacts_to<peers_atom, database_actor>,
                     // own timer: retry a failed write.
                     caf::reacts_to<retry_atom>>;

/// The keeper as the channels see it (declared apart because the keeper
/// answers its senders, the channels, by their interface): each channel
/// tells it which attempts it owns, from claim to written outcome.
using lease_keeper_actor = caf::typed_actor<
  // a channel (the sender): renew these attempts, which it owns now.
  caf::reacts_to<hold_atom, std::vector<attempt_ref>>,
  // a channel (the sender): these attempts ended here.
  caf::reacts_to<unhold_atom, std::vector<attempt_ref>>,
  // dispatcher: renew now, out of turn (cancel notifications may have been
  // missed).
  caf::reacts_to<renew_atom>>;

/// The owner of every attempt of one (channel name, args) in this runtime,
/// from claim to written outcome.
using channel_actor = caf::typed_actor<
  // dispatcher: attempts of one claim, in claim order.
  caf::reacts_to<run_atom, std::vector<claimed_task>>,
  // dispatcher or keeper: the task's attempt here ends (cancel, lost lease).
  caf::reacts_to<cancel_atom, uuid, cancel_reason>,
  // timer or executor: an attempt reached its timeout or deadline.
  caf::reacts_to<deadline_atom, attempt_ref, cancel_reason>,
  // pool or router: handlers ended.
  caf::reacts_to<done_atom, std::vector<task_outcome>>,
  // completer: these outcomes are in the database.
  caf::reacts_to<written_atom, std::vector<written_attempt>>,
  // keeper: attempts no longer owned.
  caf::reacts_to<lost_atom, std::vector<attempt_ref>>,
  // dispatcher: the pool, router, completer or keeper was restarted (a new
  // keeper hears every attempt the channel holds).
  caf::reacts_to<peers_atom, pool_actor>,
  caf::reacts_to<peers_atom, router_actor>,
  caf::reacts_to<peers_atom, completer_actor>,
  caf::reacts_to<peers_atom, lease_keeper_actor>,
  // dispatcher: pause (true) or resume (false) starting attempts.
  caf::reacts_to<pause_atom, bool>,
  // dispatcher: where events go (invalid: nobody subscribes).
  caf::reacts_to<events_atom, event_sink_actor>,
  // dispatcher: the runtime stops; give back what has not started.
  caf::reacts_to<stop_atom>,
  // dispatcher: the shutdown timeout passed; cancel what runs.
  caf::reacts_to<abandon_atom>,
  // own timer: idle since this generation.
  caf::reacts_to<idle_atom, std::uint64_t>>;

/// Decides when and how much to claim, and routes attempts and cancels to
/// their channel actors.
using dispatcher_actor = caf::typed_actor<
  // listener: a channel name has new work; a spawn's notification may name
  // the tasks (a few, each of which a claim by id may take).
  caf::reacts_to<ready_atom, std::string, std::vector<uuid>>,
  // listener, completer: claim now.
  caf::reacts_to<rescan_atom>,
  // runtime: a spawn of this task name asks for a slot (direct dispatch):
  // the claim to make in the spawn's transaction, or limit 0 (none: the
  // spawn takes the normal path).
  caf::replies_to<spawn_atom, std::string>::with<claim_request>,
  // runtime: what a direct dispatch claimed (nothing if it failed or did
  // not take the task); frees its slot.
  caf::reacts_to<spawn_atom, claim_result>,
  // listener: it reconnected, so notifications may have been missed:
  // claim now, and have the keeper renew now (a renewal brings the cancels
  // requested meanwhile).
  caf::reacts_to<renew_atom>,
  // listener: a cancel was requested for a task of (name, args).
  caf::reacts_to<cancel_atom, std::string, std::string, uuid>,
  // own timer of this generation.
  caf::reacts_to<wake_atom, std::uint64_t>,
  // a channel: attempts left their handlers.
  caf::reacts_to<done_atom, std::string, finished_counts>,
  // an idle channel: may it quit?
  caf::replies_to<retire_atom, std::string>::with<bool>,
  // the channel actors that live now.
  caf::replies_to<channels_atom>::with<std::vector<channel_actor>>,
  // the runner-local pause (true) or resume of a channel name; answered
  // once no claim made before it is in flight.
  caf::replies_to<pause_atom, std::string, bool>::with<bool>,
  // event hub: where events go (invalid: nobody subscribes); passed on to
  // every channel.
  caf::reacts_to<events_atom, event_sink_actor>,
  // runtime: a restarted sibling (claim database, claim-by-id database,
  // pool, router, completer, keeper).
  caf::reacts_to<peers_atom, database_actor>,
  caf::reacts_to<peers_atom, ready_atom, database_actor>,
  caf::reacts_to<peers_atom, pool_actor>,
  caf::reacts_to<peers_atom, router_actor>,
  caf::reacts_to<peers_atom, completer_actor>,
  caf::reacts_to<peers_atom, lease_keeper_actor>,
  // router: the task names that joined workers offer, and their capacity
  // (claimed beyond max_concurrency).
  caf::reacts_to<offer_atom, std::vector<std::string>, std::int32_t>,
  // runtime: stop claiming, give back what has not started; answers when
  // no attempt is held.
  caf::replies_to<drain_atom>::with<bool>,
  // runtime: the shutdown timeout passed.
  caf::reacts_to<abandon_atom>,
  caf::replies_to<stats_atom>::with<runner_stats>>;

/// Renews the leases of every attempt the channels own, in one statement
/// per interval.
using keeper_actor
  = lease_keeper_actor::extend<caf::reacts_to<tick_atom>,
                               caf::reacts_to<peers_atom, database_actor>>;

/// Prunes finished tasks and expires reservations; fires due schedules;
/// vacuums the live table between autovacuum's visits; compacts it after a
/// held snapshot.
using maintenance_actor
  = caf::typed_actor<caf::reacts_to<tick_atom>,
                     // own timer: fire the due schedules.
                     caf::reacts_to<schedule_atom>,
                     // own timer: look for a held snapshot.
                     caf::reacts_to<upkeep_atom>,
                     // own timer: vacuum the live table if it is due.
                     caf::reacts_to<vacuum_atom>,
                     // supervisor: a new admin database.
                     caf::reacts_to<peers_atom, database_actor>,
                     // supervisor: a new upkeep database.
                     caf::reacts_to<peers_atom, upkeep_atom, database_actor>>;

/// Serves every watch of the runtime over one listening connection; its own
/// poll loop while something is watched, a tick to close the idle
/// connection.
using watch_service_actor
  = caf::typed_actor<caf::reacts_to<watch_atom, uuid, watcher_actor>,
                     caf::reacts_to<poll_atom>, caf::reacts_to<tick_atom>>;

/// Holds the runner's session, records started attempts, hands back dead
/// runners' tasks, probes notifications; its own timer.
using session_actor
  = caf::typed_actor<caf::reacts_to<poll_atom>,
                     caf::reacts_to<peers_atom, dispatcher_actor>>;

/// Turns notifications into dispatcher messages; its own poll loop.
using listener_actor
  = caf::typed_actor<caf::reacts_to<poll_atom>,
                     caf::reacts_to<peers_atom, dispatcher_actor>>;

/// The restart policy of one runtime (see supervisor.hpp): what the
/// runtime's face asks it, and what its own actors tell it.
using supervisor_actor = caf::typed_actor<
  // face: the graceful stop; the counters.
  caf::replies_to<stop_atom>::with<bool>,
  caf::replies_to<stats_atom>::with<runner_stats>,
  // own timers: the watchdog over database calls; the shutdown timeout.
  caf::reacts_to<tick_atom>, caf::reacts_to<abandon_atom>,
  // the dispatcher restarted a crashed channel actor.
  caf::reacts_to<restart_atom, std::string>,
  // a database actor lost its connection (true) or got it back (false).
  caf::reacts_to<lost_atom, bool>,
  // face, once: the actors that serve its calls, when they have started
  // (later restarts are told to it: see face_actor).
  caf::replies_to<peers_atom>::with<database_actor, dispatcher_actor,
                                    event_hub_actor, watch_service_actor,
                                    router_actor>>;

/// The runtime's face (runtime_actor) as its supervisor sees it: told where
/// the calls go, at the start and after each restart.
using face_actor = runtime_actor::extend<
  // event hub: where spawned events go (invalid: nobody subscribes).
  caf::reacts_to<events_atom, event_sink_actor>,
  // the admin database: cancel, status, pause, spawn.
  caf::reacts_to<peers_atom, database_actor>,
  caf::reacts_to<peers_atom, dispatcher_actor>,
  caf::reacts_to<peers_atom, event_hub_actor>,
  caf::reacts_to<peers_atom, watch_service_actor>,
  caf::reacts_to<peers_atom, router_actor>>;

} // namespace cafmq::actors
