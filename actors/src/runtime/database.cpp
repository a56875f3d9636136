// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/database.hpp"

#include <caf/all.hpp>
#include <pqxx/pqxx>

#include "cafmq/admin.hpp"
#include "cafmq/client.hpp"
#include "cafmq/detail/connection_breaker.hpp"
#include "cafmq/detail/queue_connection.hpp"
#include "cafmq/error.hpp"
#include "cafmq/schedule.hpp"
#include "runtime/spawn_by_name.hpp"

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

// Spawns by name; its `spawned` event to `hub`, if valid.
caf::result<spawn_reply> spawn_named(database_ptr self,
                                     const spawn_request& req,
                                     const event_sink_actor& hub) {
  // Checked before the connection: a bad request touches nothing.
  auto resolved = resolve_spawn(*self->state.ctx, req);
  if (!resolved)
    return std::move(resolved.error());
  auto result = write_spawn(*self->state.ctx, hub, *resolved, [&] {
    return self->state.with_connection(
      [&](queue_connection& c) -> caf::expected<spawn_reply> {
        auto spawned = resolved->builder.spawn(c.connection());
        if (!spawned)
          return std::move(spawned.error());
        return spawn_reply{spawned->id, spawned->created};
      });
  });
  if (!result)
    return std::move(result.error());
  return std::move(*result);
}

database_actor::behavior_type database(database_ptr self, context_ptr ctx,
                                       std::string name,
                                       std::shared_ptr<queue_connection> conn,
                                       guard_ptr guard,
                                       supervisor_actor runtime) {
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
      return self->state.with_connection([&](queue_connection& c) {
        return to_reply(c.record(batch.completed, batch.failed, batch.released,
                                 batch.results, batch.abandoned));
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
      return self->state.with_connection(
        [&](queue_connection& c) -> caf::expected<std::string> {
          auto result = cancel(c.connection(), id);
          if (!result)
            return std::move(result.error());
          return to_string(*result);
        });
    },
    [=](status_atom, const uuid& id) {
      return self->state.with_connection(
        [&](queue_connection& c) { return status(c.connection(), id); });
    },
    [=](spawn_atom, const spawn_request& req) -> caf::result<spawn_reply> {
      return spawn_named(self, req, event_sink_actor{});
    },
    [=](spawn_atom, const spawn_request& req, const event_sink_actor& hub)
      -> caf::result<spawn_reply> { return spawn_named(self, req, hub); },
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
