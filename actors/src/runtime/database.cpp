// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/database.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/actors/detail/event_hub.hpp"

#include "cafmq/admin.hpp"
#include "cafmq/client.hpp"
#include "cafmq/detail/connection_breaker.hpp"
#include "cafmq/detail/queue_connection.hpp"
#include "cafmq/error.hpp"
#include "cafmq/schedule.hpp"
#include "cafmq/sql.hpp"
#include "runtime/spawn_by_name.hpp"
#include "runtime/thread_name.hpp"

namespace cafmq::actors {

void connection_guard::enter(std::shared_ptr<connection_breaker> breaker) {
  std::lock_guard<std::mutex> guard{mtx_};
  breaker_ = std::move(breaker);
  since_ = std::chrono::steady_clock::now();
}

void connection_guard::leave() noexcept {
  std::lock_guard<std::mutex> guard{mtx_};
  breaker_ = nullptr;
}

bool connection_guard::break_if_hung(
  std::chrono::steady_clock::duration limit) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!breaker_ || std::chrono::steady_clock::now() - since_ < limit)
    return false;
  // The blocked call returns with a connection error; the owner drops the
  // connection and opens a new one on its next call.
  auto broke = breaker_->break_now();
  breaker_ = nullptr;
  return broke;
}

namespace {

// Adds (or updates) the schedules of the runner's periodic task definitions.
caf::error register_schedules(const runtime_context& ctx,
                              pqxx::connection_base& conn) {
  if (!ctx.cfg.tasks)
    return caf::none;
  for (const auto& name : ctx.cfg.tasks->names()) {
    auto def = ctx.cfg.tasks->find(name);
    if (def == nullptr || !def->schedule)
      continue;
    schedule_spec spec{def->name, def->builder(), *def->schedule};
    if (!def->schedule_payload.empty())
      spec.task.raw_json(def->schedule_payload);
    if (auto err = add_schedule(conn, spec)) {
      ctx.log(log_level::error, "cannot register a task's schedule",
              {{"task", def->name}, {"error", render(err)}});
      if (code_of(err) == errc::database_unavailable)
        return err;
    }
  }
  return caf::none;
}

struct database_state {
  context_ptr ctx;
  connection_options options;
  std::shared_ptr<queue_connection> conn;
  guard_ptr guard;
  supervisor_actor runtime;
  bool lost = false;
  // The task definitions' schedules are in the database.
  bool schedules_registered = false;
  // Counts `conn` in the metrics while it is open.
  connection_token counted;
  static inline const char* name = "cafmq.database";

  // Runs `f` on the connection, opening it first if needed; drops the
  // connection when it broke so the next call reconnects, and tells the
  // runtime when the connection is lost or back.
  template <class F>
  auto with_connection(F f) -> decltype(f(*conn)) {
    if (!conn) {
      auto opened = queue_connection::open(ctx->cfg.database_url, options);
      if (!opened) {
        changed(true, opened.error());
        return std::move(opened.error());
      }
      conn = std::move(*opened);
      counted = count_connection(ctx->metrics);
    }
    if (guard)
      guard->enter(conn->breaker());
    auto result = f(*conn);
    if (guard)
      guard->leave();
    if (!result && code_of(result.error()) == errc::database_unavailable) {
      conn.reset();
      counted.reset();
      changed(true, result.error());
    } else {
      changed(false, caf::none);
    }
    return result;
  }

  void changed(bool now_lost, const caf::error& err) {
    if (now_lost == lost)
      return;
    lost = now_lost;
    if (lost)
      ctx->log(log_level::warning, "database connection lost",
               {{"error", render(err)}});
    else
      ctx->log(log_level::info, "database connection restored");
    if (runtime)
      caf::anon_send(runtime, lost_atom::value, lost);
  }
};

using database_ptr = database_actor::stateful_pointer<database_state>;

// Replies `true` for success: CAF 0.17 cannot reply expected<unit_t>.
caf::expected<bool> to_reply(caf::error err) {
  if (err)
    return err;
  return true;
}

write_report to_report(recorded_outcomes x) {
  write_report result;
  result.completed = std::move(x.completed);
  for (auto& f : x.failed)
    (f.state == "pending"     ? result.retrying
     : f.state == "cancelled" ? result.cancelled
                              : result.failed)
      .push_back(f.id);
  return result;
}

// Reports a task cancelled before it ran; a failure to read it only costs
// the event (the cancel committed).
void report_cancel(database_ptr self, queue_connection& c, const uuid& id,
                   const event_sink_actor& hub) {
  auto& ctx = *self->state.ctx;
  try {
    pqxx::nontransaction tx{c.connection()};
    auto rows = tx.exec_params(sql::task_channel, to_string(id));
    if (rows.empty())
      return; // pruned or cleared meanwhile
    claimed_task task;
    task.id = id;
    task.channel_name = rows[0][0].as<std::string>();
    task.channel_args = rows[0][1].as<std::string>();
    task.name = rows[0][2].as<std::string>();
    task.attempt = rows[0][3].as<std::int32_t>();
    auto event = make_event(task_event::cancelled, task, ctx);
    event.error = "cancelled before it ran";
    caf::anon_send(hub, event_atom::value,
                   std::vector<task_event>{std::move(event)});
  } catch (const std::exception& e) {
    ctx.log(log_level::warning, "a cancel was not reported to subscribers",
            {{"task", to_string(id)}, {"error", e.what()}});
  }
}

// Cancels a task; a task that is cancelled now, before it ran, is reported
// to `hub`, if valid (a running one is reported by its owner once its
// attempt ended).
caf::expected<std::string> cancel_reporting(database_ptr self, const uuid& id,
                                            const event_sink_actor& hub) {
  return self->state.with_connection(
    [&](queue_connection& c) -> caf::expected<std::string> {
      auto result = cancel(c.connection(), id);
      if (!result)
        return std::move(result.error());
      if (hub && *result == cancel_result::cancelled)
        report_cancel(self, c, id, hub);
      return to_string(*result);
    });
}

// Spawns by name, all or nothing (one request through the single spawn);
// their `spawned` events to `hub`, if valid. With `claim` (one request: a
// direct dispatch), the single spawn also claims its task in its
// transaction, and what the claim took goes to `claimed`.
caf::expected<std::vector<spawn_reply>>
spawn_named(database_ptr self, const std::vector<spawn_request>& reqs,
            const event_sink_actor& hub, const claim_request* claim = nullptr,
            claim_result* claimed = nullptr) {
  // Checked before the connection: a bad request touches nothing.
  std::vector<named_spawn> resolved;
  resolved.reserve(reqs.size());
  for (const auto& req : reqs) {
    auto x = resolve_spawn(*self->state.ctx, req);
    if (!x)
      return std::move(x.error());
    resolved.push_back(std::move(*x));
  }
  return write_spawns(*self->state.ctx, hub, resolved, [&] {
    return self->state.with_connection(
      [&](queue_connection& c) -> caf::expected<std::vector<spawn_reply>> {
        std::vector<spawn_reply> replies;
        if (resolved.size() == 1 && claim != nullptr) {
          auto x = c.spawn_claimed(resolved[0].builder, *claim);
          if (!x)
            return std::move(x.error());
          *claimed = std::move(x->claimed);
          replies.push_back(spawn_reply{x->spawned.id, x->spawned.created});
          return replies;
        }
        if (resolved.size() == 1) {
          auto spawned = resolved[0].builder.spawn(c.connection());
          if (!spawned)
            return std::move(spawned.error());
          replies.push_back(spawn_reply{spawned->id, spawned->created});
          return replies;
        }
        std::vector<spawn_builder> builders;
        builders.reserve(resolved.size());
        for (const auto& x : resolved)
          builders.push_back(x.builder);
        auto spawned = spawn_many(c.connection(), builders);
        if (!spawned)
          return std::move(spawned.error());
        for (const auto& x : *spawned)
          replies.push_back(spawn_reply{x.id, x.created});
        return replies;
      });
  });
}

database_actor::behavior_type database(database_ptr self, context_ptr ctx,
                                       std::string name,
                                       std::shared_ptr<queue_connection> conn,
                                       guard_ptr guard,
                                       supervisor_actor runtime) {
  name_this_thread("cafmq.db." + name);
  auto& st = self->state;
  st.options = connection_for(ctx->cfg, name);
  st.ctx = std::move(ctx);
  st.conn = std::move(conn);
  if (st.conn)
    st.counted = count_connection(st.ctx->metrics);
  st.guard = std::move(guard);
  st.runtime = std::move(runtime);
  // The write and renew connections open at once, on this actor's own
  // thread: the first outcome, the first renewal and a stop's last writes
  // do not wait for a connection and its plans (the claim database has the
  // start-up connection; the admin one opens when first used). A failure
  // is left to the first call, which reports it.
  if (!st.conn && (name == "write" || name == "renew")) {
    auto opened = queue_connection::open(st.ctx->cfg.database_url, st.options);
    if (opened) {
      st.conn = std::move(*opened);
      st.counted = count_connection(st.ctx->metrics);
    }
  }
  return {
    [=](claim_atom, const claim_request& req) {
      return self->state.with_connection(
        [&](queue_connection& c) { return c.claim(req); });
    },
    [=](record_atom, const write_batch& batch) {
      return self->state.with_connection(
        [&](queue_connection& c) -> caf::expected<write_report> {
          auto recorded
            = c.record(batch.completed, batch.failed, batch.released,
                       batch.results, batch.abandoned, batch.workers);
          if (!recorded)
            return std::move(recorded.error());
          return to_report(std::move(*recorded));
        });
    },
    [=](renew_atom, const std::vector<attempt_ref>& xs, caf::timespan lease) {
      return self->state.with_connection([&](queue_connection& c) {
        return c.keep_alive(
          xs, std::chrono::duration_cast<std::chrono::microseconds>(lease));
      });
    },
    [=](checkpt_atom, const attempt_ref& x, const checkpoint& cp) {
      return self->state.with_connection(
        [&](queue_connection& c) { return to_reply(c.checkpoint(x, cp)); });
    },
    [=](prune_atom, caf::timespan retention, std::int32_t limit) {
      return self->state.with_connection([&](queue_connection& c) {
        return prune(
          c.connection(),
          std::chrono::duration_cast<std::chrono::milliseconds>(retention),
          limit);
      });
    },
    [=](expire_atom, std::int32_t limit) {
      return self->state.with_connection([&](queue_connection& c) {
        return expire_reservations(c.connection(), limit);
      });
    },
    [=](upkeep_atom) {
      return self->state.with_connection(
        [&](queue_connection& c) -> caf::expected<std::int64_t> {
          auto age = oldest_snapshot(c.connection());
          if (!age)
            return std::move(age.error());
          return *age ? (*age)->count() : std::int64_t{-1};
        });
    },
    [=](upkeep_atom, std::int64_t min_index_bytes) {
      return self->state.with_connection([&](queue_connection& c) {
        return vacuum_live_table(c.connection(), min_index_bytes);
      });
    },
    [=](upkeep_atom, const std::string& index) {
      return self->state.with_connection([&](queue_connection& c) {
        return rebuild_live_index(c.connection(), index);
      });
    },
    [=](vacuum_atom, std::int64_t min_dead_rows) {
      return self->state.with_connection([&](queue_connection& c) {
        return vacuum_live_table_if_due(c.connection(), min_dead_rows);
      });
    },
    [=](pause_atom, const std::string& kind, const std::string& name, bool on) {
      return self->state.with_connection(
        [&](queue_connection& c) -> caf::expected<bool> {
          if (kind != "channel" && kind != "task")
            return make_error(errc::invalid_argument,
                              "a pause applies to a channel or a task, not "
                                + kind);
          auto k = kind == "channel" ? pause_kind::channel : pause_kind::task;
          return on ? pause(c.connection(), k, name)
                    : resume(c.connection(), k, name);
        });
    },
    [=](schedule_atom) {
      return self->state.with_connection(
        [&](queue_connection& c) -> caf::expected<std::int32_t> {
          auto& st = self->state;
          if (!st.schedules_registered) {
            if (auto err = register_schedules(*st.ctx, c.connection()))
              return err;
            st.schedules_registered = true;
          }
          auto fired = fire_due_schedules(c.connection());
          if (!fired)
            return std::move(fired.error());
          for (const auto& why : fired->errors)
            st.ctx->log(log_level::warning, "a schedule failed to fire",
                        {{"error", why}});
          return static_cast<std::int32_t>(fired->spawned);
        });
    },
    [=](cancel_atom, const uuid& id) {
      return cancel_reporting(self, id, event_sink_actor{});
    },
    [=](cancel_atom, const uuid& id, const event_sink_actor& hub) {
      return cancel_reporting(self, id, hub);
    },
    [=](status_atom, const uuid& id) {
      return self->state.with_connection(
        [&](queue_connection& c) { return status(c.connection(), id); });
    },
    [=](spawn_atom, const spawn_request& req,
        const event_sink_actor& hub) -> caf::result<spawn_reply> {
      auto result = spawn_named(self, std::vector<spawn_request>{req}, hub);
      if (!result)
        return std::move(result.error());
      return result->front();
    },
    [=](spawn_atom, const std::vector<spawn_request>& reqs,
        const event_sink_actor& hub) -> caf::result<std::vector<spawn_reply>> {
      auto result = spawn_named(self, reqs, hub);
      if (!result)
        return std::move(result.error());
      return std::move(*result);
    },
    [=](spawn_atom, const spawn_request& req, const event_sink_actor& hub,
        const claim_request& claim) -> caf::result<spawn_reply, claim_result> {
      claim_result claimed;
      auto result = spawn_named(self, std::vector<spawn_request>{req}, hub,
                                &claim, &claimed);
      if (!result)
        return std::move(result.error());
      return {result->front(), std::move(claimed)};
    },
  };
}

} // namespace

database_actor spawn_database(caf::actor_system& sys, context_ptr ctx,
                              std::string name,
                              std::shared_ptr<queue_connection> conn,
                              guard_ptr guard, supervisor_actor runtime) {
  return sys.spawn<caf::detached>(database, std::move(ctx), std::move(name),
                                  std::move(conn), std::move(guard),
                                  std::move(runtime));
}

connection_options connection_for(const runner_config& cfg,
                                  const std::string& role) {
  auto result = cfg.connection;
  if (!result.application_name.empty())
    result.application_name += " " + role;
  return result;
}

} // namespace cafmq::actors
