// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/maintenance.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

// Indexes of the live table smaller than this are never rebuilt.
constexpr std::int64_t min_rebuild_bytes = std::int64_t{1} << 20;

// While a snapshot is held, its end is looked for this often (or every
// maintenance_interval, if shorter); the compaction waits until no
// transaction is older than this (or than compact_after_hold, if shorter),
// because each rebuild waits for the transactions older than it.
constexpr caf::timespan hold_poll = std::chrono::seconds{5};

// Whether the live table is due a vacuum (vacuum_dead_rows) is asked this
// often.
constexpr caf::timespan vacuum_poll = std::chrono::seconds{1};

struct maintenance_state {
  context_ptr ctx;
  // Prunes, expiries, schedules.
  database_actor db;
  // Vacuums, the compaction and its look for a held snapshot.
  database_actor upkeep_db;
  // A transaction has kept vacuum from the live table for longer than
  // compact_after_hold: the table is compacted once it ends.
  bool held = false;
  // The indexes a running compaction has still to rebuild, and those it
  // rebuilt.
  std::vector<std::string> to_rebuild;
  std::vector<std::string> rebuilt;
  // When the running compaction began.
  caf::actor_clock::time_point compaction_began;
  static inline const char* name = "cafmq.maintenance";
};

using maintenance_ptr = maintenance_actor::stateful_pointer<maintenance_state>;

void look_for_hold_later(maintenance_ptr self, caf::timespan after) {
  self->delayed_send(self, after, upkeep_atom::value);
}

caf::timespan hold_poll_interval(const runner_config& cfg) {
  return std::min(caf::timespan{cfg.maintenance_interval}, hold_poll);
}

// The compaction's last step: a second vacuum gives back the pages at the
// table's end that the tasks running during the first one held.
void finish_compaction(maintenance_ptr self) {
  auto& st = self->state;
  self
    ->request(st.upkeep_db, st.ctx->request_timeout(), upkeep_atom::value,
              min_rebuild_bytes)
    .then(
      [=](const std::vector<std::string>&) {
        auto& st = self->state;
        std::string names;
        for (const auto& x : st.rebuilt)
          names += (names.empty() ? "" : " ") + x;
        auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
          self->clock().now() - st.compaction_began);
        st.ctx->log(log_level::info,
                    "live table compacted after a held snapshot",
                    {{"rebuilt", names.empty() ? "none" : names},
                     {"took_ms", took.count()}});
        st.rebuilt.clear();
        look_for_hold_later(self, st.ctx->cfg.maintenance_interval);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        st.ctx->log(log_level::warning, "vacuum of the live table failed",
                    {{"error", render(err)}});
        st.rebuilt.clear();
        look_for_hold_later(self, st.ctx->cfg.maintenance_interval);
      });
}

// Rebuilds the indexes in to_rebuild one request at a time (each is bound
// by the request timeout), then finishes. A rebuild that fails leaves an
// invalid index, which the last vacuum drops.
void rebuild_next(maintenance_ptr self) {
  auto& st = self->state;
  if (st.to_rebuild.empty()) {
    finish_compaction(self);
    return;
  }
  auto index = st.to_rebuild.front();
  st.to_rebuild.erase(st.to_rebuild.begin());
  self
    ->request(st.upkeep_db, st.ctx->request_timeout(), upkeep_atom::value,
              index)
    .then(
      [=](std::int64_t) {
        self->state.rebuilt.push_back(index);
        rebuild_next(self);
      },
      [=](caf::error& err) {
        self->state.ctx->log(log_level::warning,
                             "rebuilding an index of the live table failed",
                             {{"index", index}, {"error", render(err)}});
        rebuild_next(self);
      });
}

// Vacuums the live table, then rebuilds the indexes the vacuum names.
void compact(maintenance_ptr self) {
  auto& st = self->state;
  st.compaction_began = self->clock().now();
  self
    ->request(st.upkeep_db, st.ctx->request_timeout(), upkeep_atom::value,
              min_rebuild_bytes)
    .then(
      [=](std::vector<std::string>& names) {
        self->state.to_rebuild = std::move(names);
        rebuild_next(self);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        st.ctx->log(log_level::warning, "vacuum of the live table failed",
                    {{"error", render(err)}});
        look_for_hold_later(self, st.ctx->cfg.maintenance_interval);
      });
}

// Vacuums the live table if it is due one, then asks again in a second
// (after a failure, in a maintenance interval).
void vacuum_if_due(maintenance_ptr self) {
  auto& st = self->state;
  auto began = self->clock().now();
  self
    ->request(st.upkeep_db, st.ctx->request_timeout(), vacuum_atom::value,
              std::int64_t{st.ctx->cfg.vacuum_dead_rows})
    .then(
      [=](bool vacuumed) {
        auto& st = self->state;
        if (vacuumed) {
          auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            self->clock().now() - began);
          st.ctx->log(log_level::debug, "live table vacuumed",
                      {{"took_ms", took.count()}});
        }
        self->delayed_send(self, vacuum_poll, vacuum_atom::value);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        st.ctx->log(log_level::warning, "vacuum of the live table failed",
                    {{"error", render(err)}});
        self->delayed_send(self, st.ctx->cfg.maintenance_interval,
                           vacuum_atom::value);
      });
}

// Looks at the oldest transaction: past compact_after_hold it is a hold;
// once no transaction is older than the hold poll, a hold seen before has
// ended and the table is compacted.
void look_for_hold(maintenance_ptr self) {
  auto& st = self->state;
  self->request(st.upkeep_db, st.ctx->request_timeout(), upkeep_atom::value)
    .then(
      [=](std::int64_t age_ms) {
        auto& st = self->state;
        auto& cfg = st.ctx->cfg;
        auto age = std::chrono::milliseconds{age_ms};
        auto quiet = std::min(caf::timespan{cfg.compact_after_hold},
                              hold_poll_interval(cfg));
        if (age_ms >= 0 && age >= cfg.compact_after_hold) {
          if (!st.held)
            st.ctx->log(log_level::warning,
                        "a transaction keeps vacuum from the live table: it "
                        "grows until that transaction ends",
                        {{"running_ms", age_ms}});
          st.held = true;
          look_for_hold_later(self, hold_poll_interval(cfg));
        } else if (st.held && (age_ms < 0 || age < quiet)) {
          st.held = false;
          compact(self);
        } else {
          look_for_hold_later(
            self, st.held ? hold_poll_interval(cfg)
                          : caf::timespan{cfg.maintenance_interval});
        }
      },
      [=](caf::error& err) {
        auto& st = self->state;
        st.ctx->log(log_level::warning, "looking for a held snapshot failed",
                    {{"error", render(err)}});
        look_for_hold_later(self, st.ctx->cfg.maintenance_interval);
      });
}

maintenance_actor::behavior_type maintenance(maintenance_ptr self,
                                             context_ptr ctx, database_actor db,
                                             database_actor upkeep_db) {
  self->state.ctx = std::move(ctx);
  self->state.db = std::move(db);
  self->state.upkeep_db = std::move(upkeep_db);
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
  if (cfg.compact_after_hold.count() > 0)
    look_for_hold_later(self, cfg.maintenance_interval);
  if (cfg.vacuum_dead_rows > 0)
    self->delayed_send(self, vacuum_poll, vacuum_atom::value);
  std::int32_t batch = cfg.prune_batch;
  return {
    [=](upkeep_atom) { look_for_hold(self); },
    [=](vacuum_atom) { vacuum_if_due(self); },
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
    [=](peers_atom, upkeep_atom, database_actor& x) {
      self->state.upkeep_db = std::move(x);
    },
  };
}

} // namespace

maintenance_actor spawn_maintenance(caf::actor_system& sys, context_ptr ctx,
                                    database_actor db,
                                    database_actor upkeep_db) {
  return sys.spawn(maintenance, std::move(ctx), std::move(db),
                   std::move(upkeep_db));
}

} // namespace cafmq::actors
