// SPDX-License-Identifier: BSD-3-Clause
#include <caf/all.hpp>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/worker.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

struct worker_node::impl {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  worker_actor worker;
  caf::error reason;
  bool ended = false;
};

worker_node::worker_node(std::unique_ptr<impl> ptr) : impl_(std::move(ptr)) {
  // nop
}

worker_node::~worker_node() {
  stop();
  wait();
}

caf::expected<std::unique_ptr<worker_node>>
worker_node::start(worker_config cfg, const node_endpoint& where,
                   const tls_options& tls) {
  if (auto err = check(cfg))
    return err;
  auto ptr = std::make_unique<impl>();
  add_message_types(ptr->cfg);
  enable_nodes(ptr->cfg, tls);
  ptr->sys = std::make_unique<caf::actor_system>(ptr->cfg);
  auto node
    = connect_node(*ptr->sys, where, caf::timespan{cfg.request_timeout});
  if (!node)
    return std::move(node.error());
  ptr->worker = spawn_worker(*ptr->sys, std::move(*node), std::move(cfg));
  return std::unique_ptr<worker_node>{new worker_node(std::move(ptr))};
}

caf::error worker_node::wait() {
  if (!impl_->ended) {
    caf::scoped_actor self{*impl_->sys};
    self->monitor(impl_->worker);
    self->receive([&](caf::down_msg& msg) { impl_->reason = msg.reason; });
    impl_->ended = true;
  }
  return impl_->reason;
}

void worker_node::stop() {
  if (!impl_->ended)
    caf::anon_send(impl_->worker, stop_atom::value);
}

worker_actor worker_node::handle() const {
  return impl_->worker;
}

} // namespace cafmq::actors
