#include "cafmq/actors/maintenance.hpp"

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

caf::behavior maintenance(caf::event_based_actor* self, caf::actor db,
                          std::chrono::milliseconds interval,
                          std::chrono::milliseconds retention, int batch) {
  auto report = [=](caf::error& err) {
    aout(self) << "cafmq: maintenance failed: " << render(err) << std::endl;
    self->delayed_send(self, interval, tick_atom::value);
  };
  self->delayed_send(self, interval, tick_atom::value);
  return {
    [=](tick_atom) {
      self->request(db, caf::infinite, expire_atom::value, batch)
        .then(
          [=](std::int64_t) {
            self
              ->request(db, caf::infinite, prune_atom::value, retention, batch)
              .then(
                [=](std::int64_t pruned) {
                  // A full batch: more are waiting, go on at once.
                  if (pruned >= batch)
                    self->send(self, tick_atom::value);
                  else
                    self->delayed_send(self, interval, tick_atom::value);
                },
                report);
          },
          report);
    },
  };
}

} // namespace

caf::actor spawn_maintenance(caf::actor_system& sys, caf::actor db,
                             std::chrono::milliseconds interval,
                             std::chrono::milliseconds retention, int batch) {
  return sys.spawn(maintenance, std::move(db), interval, retention, batch);
}

} // namespace cafmq::actors
