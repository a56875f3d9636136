// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/maintenance.hpp"

#include <caf/all.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

struct maintenance_state {
  context_ptr ctx;
  database_actor db;
  static inline const char* name = "cafmq.maintenance";
};

using maintenance_ptr = maintenance_actor::stateful_pointer<maintenance_state>;

maintenance_actor::behavior_type
maintenance(maintenance_ptr self, context_ptr ctx, database_actor db) {
  self->state.ctx = std::move(ctx);
  self->state.db = std::move(db);
  auto& cfg = self->state.ctx->cfg;
  auto again_later = [=] {
    self->delayed_send(self, self->state.ctx->cfg.maintenance_interval,
                       tick_atom::value);
  };
  auto report = [=](caf::error& err) {
    self->state.ctx->log(log_level::warning, "maintenance failed",
                         {{"error", render(err)}});
    again_later();
  };
  again_later();
  auto schedule_later = [=] {
    auto every = self->state.ctx->cfg.schedule_interval;
    if (every.count() > 0)
      self->delayed_send(self, every, schedule_atom::value);
  };
  if (cfg.schedule_interval.count() > 0)
    self->send(self, schedule_atom::value);
  std::int32_t batch = cfg.prune_batch;
  return {
    [=](schedule_atom) {
      auto& st = self->state;
      self->request(st.db, st.ctx->request_timeout(), schedule_atom::value)
        .then(
          [=](std::int32_t spawned) {
            if (spawned > 0)
              self->state.ctx->log(log_level::debug, "schedules fired",
                                   {{"spawned", std::to_string(spawned)}});
            schedule_later();
          },
          [=](caf::error& err) {
            self->state.ctx->log(log_level::warning, "firing schedules failed",
                                 {{"error", render(err)}});
            schedule_later();
          });
    },
    [=](tick_atom) {
      auto& st = self->state;
      auto timeout = st.ctx->request_timeout();
      self->request(st.db, timeout, expire_atom::value, batch)
        .then(
          [=](std::int64_t) {
            auto& st = self->state;
            self
              ->request(st.db, timeout, prune_atom::value,
                        caf::timespan{st.ctx->cfg.retention}, batch)
              .then(
                [=](std::int64_t pruned) {
                  // A full batch: more are waiting, go on at once.
                  if (pruned >= batch)
                    self->send(self, tick_atom::value);
                  else
                    again_later();
                },
                report);
          },
          report);
    },
    [=](peers_atom, database_actor& x) { self->state.db = std::move(x); },
  };
}

} // namespace

maintenance_actor spawn_maintenance(caf::actor_system& sys, context_ptr ctx,
                                    database_actor db) {
  return sys.spawn(maintenance, std::move(ctx), std::move(db));
}

} // namespace cafmq::actors
