// SPDX-License-Identifier: BSD-3-Clause
#include <condition_variable>
#include <mutex>
#include <optional>

#include <caf/all.hpp>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/worker.hpp"
#include "cafmq/error.hpp"
#include "config/scheduler.hpp"

namespace cafmq::actors {

struct worker_node::impl {
  // The join's end, set once by the worker actor (worker_config::on_join).
  struct join_result {
    std::mutex mtx;
    std::condition_variable cv;
    std::optional<caf::error> value;

    void set(const caf::error& x) {
      {
        std::lock_guard<std::mutex> guard{mtx};
        value = x;
      }
      cv.notify_all();
    }
  };

  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  worker_actor worker;
  std::shared_ptr<join_result> joined = std::make_shared<join_result>();
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
  configure_scheduler(ptr->cfg);
  enable_nodes(ptr->cfg, tls);
  ptr->sys = std::make_unique<caf::actor_system>(ptr->cfg);
  auto node
    = connect_node(*ptr->sys, where, caf::timespan{cfg.request_timeout});
  if (!node)
    return std::move(node.error());
  cfg.on_join = [joined = ptr->joined,
                 user = std::move(cfg.on_join)](const caf::error& err) {
    if (user)
      user(err);
    joined->set(err);
  };
  ptr->worker = spawn_worker(*ptr->sys, std::move(*node), std::move(cfg));
  return std::unique_ptr<worker_node>{new worker_node(std::move(ptr))};
}

caf::error worker_node::wait_joined(std::chrono::milliseconds timeout) {
  auto& x = *impl_->joined;
  std::unique_lock<std::mutex> guard{x.mtx};
  if (!x.cv.wait_for(guard, timeout, [&] { return x.value.has_value(); }))
    return make_error(errc::node_unreachable,
                      "the runner did not answer the join within "
                        + std::to_string(timeout.count()) + " ms");
  return *x.value;
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
