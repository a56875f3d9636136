// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/worker.hpp"

#include <unordered_map>

#include <caf/all.hpp>
#include <unistd.h>

#include "cafmq/error.hpp"
#include "nodes/node_auth.hpp"
#include "nodes/worker_impl.hpp"
#include "runtime/attempt.hpp"
#include "runtime/executor.hpp"
#include "runtime/outcome_box.hpp"

namespace cafmq::actors {

namespace {

/// A handler's writes on a worker node: checkpoints and keep-alives go to
/// the port (which writes them while the attempt is current), completion is
/// reported when the handler returns. Writes in the handler's own
/// transaction need the worker to know the database (`has_database`).
class port_backend : public attempt_backend {
public:
  port_backend(caf::actor_system& sys, worker_link_actor port,
               caf::timespan timeout, std::shared_ptr<executor::gate> gate,
               bool has_database, std::string node)
    : sys_(sys), port_(std::move(port)), timeout_(timeout),
      gate_(std::move(gate)), has_database_(has_database),
      node_(std::move(node)) {
    // nop
  }

  std::string worker() const override {
    return node_;
  }

  caf::error complete(const attempt_ref&, const std::string&) override {
    return caf::none;
  }

  caf::error checkpoint(const attempt_ref& x,
                        const cafmq::checkpoint& cp) override {
    return call(checkpt_atom::value, x, cp);
  }

  caf::error keep_alive(const attempt_ref& x,
                        std::chrono::microseconds lease) override {
    return call(renew_atom::value, x, caf::timespan{lease});
  }

  caf::error may_write_in_transaction(const attempt_ref& x) override {
    if (has_database_)
      return caf::none;
    return make_error(errc::invalid_argument,
                      "task " + to_string(x.id)
                        + " runs on a worker node, which has no database: it "
                          "cannot complete or checkpoint in its own "
                          "transaction; return success or call complete() "
                          "and checkpoint(cp) instead, or give the worker "
                          "the database's URL (worker_config::database_url)");
  }

private:
  template <class... Ts>
  caf::error call(Ts&&... xs) {
    // The worker stopped without waiting for this handler (its executor
    // closed): the actor system may be gone.
    auto open = gate_->enter();
    if (!open)
      return make_error(errc::stale_attempt,
                        "the worker stopped and no longer reports this "
                        "attempt");
    caf::error result;
    caf::scoped_actor self{sys_};
    self->request(port_, timeout_, std::forward<Ts>(xs)...)
      .receive([](bool) {}, [&](caf::error& err) { result = std::move(err); });
    return result;
  }

  caf::actor_system& sys_;
  worker_link_actor port_;
  caf::timespan timeout_;
  std::shared_ptr<executor::gate> gate_;
  bool has_database_;
  std::string node_;
};

// The worker's own interface: its public one, and the executor threads'
// "outcomes wait in the box".
using worker_impl_actor = worker_actor::extend<caf::reacts_to<collect_atom>>;

struct worker_state {
  std::shared_ptr<const worker_config> cfg;
  std::unique_ptr<logger> log;
  worker_link_actor port;
  std::shared_ptr<executor> exec;
  // The attempts here, queued or running: their tokens and task names.
  struct held {
    std::shared_ptr<cancellation> token;
    std::string name;
  };
  std::unordered_map<attempt_ref, held> running;
  std::shared_ptr<outcome_box> outbox = std::make_shared<outcome_box>();
  bool stopping = false;
  static inline const char* name = "cafmq.worker";
};

using worker_ptr = worker_impl_actor::stateful_pointer<worker_state>;

failure_filter filter_of(const worker_config& cfg, const std::string& name) {
  if (auto def = cfg.tasks->find(name); def != nullptr && def->is_failure)
    return def->is_failure;
  return cfg.is_failure;
}

void report(worker_ptr self, std::vector<task_outcome> outcomes) {
  auto& st = self->state;
  for (auto& x : outcomes)
    st.running.erase(x.ref);
  if (!outcomes.empty() && st.port)
    self->send(st.port, done_atom::value, std::move(outcomes));
  if (st.stopping && st.running.empty())
    self->quit();
}

void run(worker_ptr self, std::vector<claimed_task>& tasks) {
  auto& st = self->state;
  std::vector<executor::job> jobs;
  std::vector<task_outcome> refused;
  for (auto& task : tasks) {
    attempt_ref ref{task.id, task.attempt};
    if (st.stopping) {
      refused.push_back(
        unstarted_outcome(ref, cancel_reason::shutdown, nullptr));
      continue;
    }
    auto token = std::make_shared<cancellation>();
    st.running.emplace(ref, worker_state::held{token, task.name});
    auto backend = std::make_shared<port_backend>(
      self->system(), st.port, caf::timespan{st.cfg->request_timeout},
      st.exec->system_gate(), !st.cfg->database_url.empty(), st.cfg->node);
    auto job = [task = std::move(task), token, ref, cfg = st.cfg, backend,
                box = st.outbox,
                me = caf::actor_cast<worker_impl_actor>(self)] {
      auto filter = filter_of(*cfg, task.name);
      auto outcome = token->cancelled()
                       ? unstarted_outcome(ref, token->reason(), filter)
                       : run_attempt(*cfg->tasks, filter, backend, task, token);
      if (box->put(std::move(outcome)))
        caf::anon_send(me, collect_atom::value);
    };
    jobs.push_back({ref, std::move(job)});
  }
  st.exec->post(std::move(jobs));
  report(self, std::move(refused));
}

// The runner is gone: handlers are told, their outcomes have nowhere to go.
void runner_lost(worker_ptr self, const caf::error& reason) {
  auto& st = self->state;
  (*st.log)(log_level::error, "runner node lost, running handlers cancelled",
            {{"worker", st.cfg->node},
             {"attempts", st.running.size()},
             {"reason", render(reason)}});
  for (auto& kvp : st.running)
    kvp.second.token->cancel(cancel_reason::lost);
  st.running.clear();
  st.port = nullptr;
  self->quit(reason);
}

worker_impl_actor::behavior_type worker(worker_ptr self, node_actor node,
                                        worker_config cfg,
                                        std::shared_ptr<executor> exec) {
  auto& st = self->state;
  st.cfg = std::make_shared<const worker_config>(std::move(cfg));
  st.log = std::make_unique<logger>(st.cfg->log ? st.cfg->log : stderr_sink(),
                                    st.cfg->min_log_level);
  st.exec = std::move(exec);
  self->attach_functor([exec = st.exec](const caf::error&) { exec->close(); });
  worker_offer offer;
  offer.node = st.cfg->node;
  offer.names = st.cfg->tasks->names();
  offer.capacity = st.cfg->capacity;
  offer.pid = st.cfg->pid;
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    if (!st.port || msg.source != st.port.address())
      return;
    if (msg.reason) {
      runner_lost(self, msg.reason);
      return;
    }
    // The port ended normally: the runner let us go.
    for (auto& kvp : st.running)
      kvp.second.token->cancel(cancel_reason::shutdown);
    self->quit();
  });
  // Awaited: the port may send work before this answer arrives (it places
  // waiting attempts at the join), and that work waits in the mailbox
  // until the worker knows where to report it.
  self
    ->request(node, st.cfg->request_timeout, join_atom::value, offer,
              caf::actor_cast<worker_actor>(self))
    .await(
      [=](worker_link_actor& port) {
        auto& st = self->state;
        self->monitor(port);
        st.port = std::move(port);
        (*st.log)(log_level::info, "worker joined its runner",
                  {{"worker", st.cfg->node}, {"capacity", st.cfg->capacity}});
        if (st.cfg->on_join)
          st.cfg->on_join(caf::none);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        (*st.log)(log_level::error, "worker could not join",
                  {{"worker", st.cfg->node}, {"error", render(err)}});
        if (st.cfg->on_join)
          st.cfg->on_join(err);
        self->quit(err);
      });
  return {
    [=](run_atom, std::vector<claimed_task>& tasks) { run(self, tasks); },
    [=](cancel_atom, const attempt_ref& ref, cancel_reason why) {
      auto& st = self->state;
      auto i = st.running.find(ref);
      if (i == st.running.end())
        return;
      if (st.exec->take(ref)) {
        auto filter = filter_of(*st.cfg, i->second.name);
        report(self, {unstarted_outcome(ref, why, filter)});
        return;
      }
      i->second.token->cancel(why);
    },
    [=](stop_atom) {
      auto& st = self->state;
      st.stopping = true;
      std::vector<task_outcome> released;
      for (auto& ref : st.exec->take_all())
        released.push_back(
          unstarted_outcome(ref, cancel_reason::shutdown, nullptr));
      for (auto& kvp : st.running)
        kvp.second.token->cancel(cancel_reason::shutdown);
      report(self, std::move(released));
    },
    [=](collect_atom) { report(self, self->state.outbox->take()); },
  };
}

} // namespace

caf::error check(worker_config& cfg) {
  auto invalid = [](std::string what) {
    return make_error(errc::invalid_argument, "worker: " + std::move(what));
  };
  if (!cfg.tasks || cfg.tasks->names().empty())
    return invalid("no task definitions given");
  if (cfg.capacity < 1)
    return invalid("capacity must be at least 1, got "
                   + std::to_string(cfg.capacity));
  if (cfg.request_timeout.count() <= 0)
    return invalid("request timeout must be positive");
  if (cfg.node.empty())
    cfg.node = default_node_name();
  return caf::none;
}

worker_actor spawn_worker(caf::actor_system& sys, node_actor node,
                          worker_config cfg) {
  auto exec
    = std::make_shared<executor>(static_cast<std::size_t>(cfg.capacity));
  return spawn_worker(sys, std::move(node), std::move(cfg), std::move(exec));
}

worker_actor spawn_worker(caf::actor_system& sys, node_actor node,
                          worker_config cfg, std::shared_ptr<executor> exec) {
  auto result
    = sys.spawn(worker, std::move(node), std::move(cfg), std::move(exec));
  return caf::actor_cast<worker_actor>(result);
}

} // namespace cafmq::actors
