#include "cafmq/actors/completer.hpp"

#include <caf/all.hpp>

#include "cafmq/actors/messages.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

struct completer_state {
  write_batch pending;
  bool writing = false;
  std::chrono::milliseconds retry_delay{0};
  std::vector<caf::response_promise> flushes;
  static inline const char* name = "cafmq.completer";
};

using completer_actor = caf::stateful_actor<completer_state>;

void write(completer_actor* self, const caf::actor& db,
           const caf::actor& dispatcher);

void written(completer_actor* self, const caf::actor& db,
             const caf::actor& dispatcher, const write_batch& batch) {
  std::vector<attempt_ref> refs = batch.completed;
  for (auto& x : batch.failed)
    refs.push_back(x.ref);
  refs.insert(refs.end(), batch.released.begin(), batch.released.end());
  self->send(dispatcher, written_atom::value, std::move(refs));
  if (!batch.failed.empty())
    self->send(dispatcher, rescan_atom::value);
  self->state.writing = false;
  self->state.retry_delay = std::chrono::milliseconds{0};
  if (!self->state.pending.empty()) {
    write(self, db, dispatcher);
    return;
  }
  for (auto& rp : self->state.flushes)
    rp.deliver(true);
  self->state.flushes.clear();
}

void write(completer_actor* self, const caf::actor& db,
           const caf::actor& dispatcher) {
  auto batch = std::move(self->state.pending);
  self->state.pending = write_batch{};
  self->state.writing = true;
  self->request(db, caf::infinite, record_atom::value, batch)
    .then([=](bool) { written(self, db, dispatcher, batch); },
          [=](caf::error& err) mutable {
            // Put the batch back in front and try again after a backoff.
            auto& st = self->state;
            st.writing = false;
            aout(self) << "cafmq: writing task outcomes failed, retrying: "
                       << render(err) << std::endl;
            batch.completed.insert(batch.completed.end(),
                                   st.pending.completed.begin(),
                                   st.pending.completed.end());
            batch.failed.insert(batch.failed.end(), st.pending.failed.begin(),
                                st.pending.failed.end());
            batch.released.insert(batch.released.end(),
                                  st.pending.released.begin(),
                                  st.pending.released.end());
            st.pending = std::move(batch);
            st.retry_delay = std::min(
              std::chrono::milliseconds{5000},
              std::max(std::chrono::milliseconds{50}, st.retry_delay * 2));
            self->delayed_send(self, st.retry_delay, flush_atom::value, true);
          });
}

caf::behavior completer(completer_actor* self, caf::actor db,
                        caf::actor dispatcher) {
  return {
    [=](done_atom, const std::vector<task_outcome>& xs) {
      auto& st = self->state;
      for (auto& x : xs) {
        if (x.kind == task_outcome::completed)
          st.pending.completed.push_back(x.ref);
        else if (x.kind == task_outcome::failed)
          st.pending.failed.push_back({x.ref, x.error, x.retryable});
        else if (x.kind == task_outcome::released)
          st.pending.released.push_back(x.ref);
      }
      if (!st.writing && st.retry_delay.count() == 0 && !st.pending.empty())
        write(self, db, dispatcher);
    },
    [=](flush_atom) -> caf::result<bool> {
      auto& st = self->state;
      if (!st.writing && st.pending.empty())
        return true;
      st.flushes.push_back(self->make_response_promise());
      return caf::delegated<bool>{};
    },
    [=](flush_atom, bool) {
      // The retry timer.
      if (!self->state.writing && !self->state.pending.empty())
        write(self, db, dispatcher);
    },
  };
}

} // namespace

caf::actor spawn_completer(caf::actor_system& sys, caf::actor db,
                           caf::actor dispatcher) {
  return sys.spawn(completer, std::move(db), std::move(dispatcher));
}

} // namespace cafmq::actors
