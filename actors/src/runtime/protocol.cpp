// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/protocol.hpp"

#include "cafmq/actors/detail/protocol.hpp"

#include <caf/actor_system_config.hpp>

namespace cafmq::actors {

void add_message_types(caf::actor_system_config& cfg) {
  // Each registration also registers std::vector<T>.
  cfg.add_message_type<uuid>("cafmq::uuid")
    .add_message_type<attempt_ref>("cafmq::attempt_ref")
    .add_message_type<attempt_failure>("cafmq::attempt_failure")
    .add_message_type<claimed_task>("cafmq::claimed_task")
    .add_message_type<claim_request>("cafmq::claim_request")
    .add_message_type<claim_result>("cafmq::claim_result")
    .add_message_type<lease_state>("cafmq::lease_state")
    .add_message_type<checkpoint>("cafmq::checkpoint")
    .add_message_type<cancel_reason>("cafmq::cancel_reason")
    .add_message_type<task_status>("cafmq::task_status")
    .add_message_type<task_outcome>("cafmq::task_outcome")
    .add_message_type<write_batch>("cafmq::write_batch")
    .add_message_type<write_report>("cafmq::write_report")
    .add_message_type<written_attempt>("cafmq::written_attempt")
    .add_message_type<finished_counts>("cafmq::finished_counts")
    .add_message_type<runner_stats>("cafmq::runner_stats")
    .add_message_type<handler_actor>("cafmq::handler_actor")
    .add_message_type<database_actor>("cafmq::database_actor")
    .add_message_type<pool_actor>("cafmq::pool_actor")
    .add_message_type<router_actor>("cafmq::router_actor")
    .add_message_type<completer_actor>("cafmq::completer_actor")
    .add_message_type<channel_actor>("cafmq::channel_actor")
    .add_message_type<dispatcher_actor>("cafmq::dispatcher_actor")
    .add_message_type<watcher_actor>("cafmq::watcher_actor")
    .add_message_type<spawn_request>("cafmq::spawn_request")
    .add_message_type<spawn_reply>("cafmq::spawn_reply")
    .add_message_type<task_event>("cafmq::task_event")
    .add_message_type<event_filter>("cafmq::event_filter")
    .add_message_type<worker_offer>("cafmq::worker_offer")
    .add_message_type<event_actor>("cafmq::event_actor")
    .add_message_type<worker_actor>("cafmq::worker_actor")
    .add_message_type<worker_link_actor>("cafmq::worker_link_actor")
    .add_message_type<worker_port_actor>("cafmq::worker_port_actor")
    .add_message_type<offer_listener_actor>("cafmq::offer_listener_actor")
    .add_message_type<lease_keeper_actor>("cafmq::lease_keeper_actor")
    .add_message_type<node_actor>("cafmq::node_actor")
    .add_message_type<gate_actor>("cafmq::gate_actor")
    .add_message_type<event_hub_actor>("cafmq::event_hub_actor");
}

} // namespace cafmq::actors
