// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/actors/detail/completer.hpp"

#include <unordered_map>

#include <caf/all.hpp>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

struct pending_outcome {
  channel_actor owner;
  task_outcome outcome;
};

struct completer_state {
  context_ptr ctx;
  database_actor db;
  std::vector<pending_outcome> pending;
  bool writing = false;
  std::chrono::milliseconds retry_delay{0};
  std::vector<caf::typed_response_promise<bool>> flushes;
  static inline const char* name = "cafmq.completer";
};

using completer_ptr = completer_actor::stateful_pointer<completer_state>;

write_batch to_batch(const std::vector<pending_outcome>& xs) {
  write_batch batch;
  for (auto& x : xs) {
    auto& outcome = x.outcome;
    if (outcome.kind == task_outcome::completed) {
      batch.completed.push_back(outcome.ref);
      if (!outcome.result.empty()) {
        batch.results.resize(batch.completed.size());
        batch.results.back() = outcome.result;
      }
      if (!outcome.worker.empty()) {
        batch.workers.resize(batch.completed.size());
        batch.workers.back() = outcome.worker;
      }
    } else if (outcome.kind == task_outcome::failed)
      batch.failed.push_back(
        {outcome.ref, outcome.error, outcome.retryable, outcome.worker});
    else if (outcome.kind == task_outcome::released)
      batch.released.push_back(outcome.ref);
    else if (outcome.kind == task_outcome::abandoned)
      batch.abandoned.push_back(outcome.ref);
  }
  return batch;
}

void write(completer_ptr self);

// How the database took each completion and failure, by task.
std::unordered_map<uuid, written_as> by_task(const write_report& report) {
  std::unordered_map<uuid, written_as> result;
  result.reserve(report.completed.size() + report.retrying.size()
                 + report.failed.size() + report.cancelled.size());
  for (auto [ids, as] : {std::pair{&report.completed, written_as::completed},
                         std::pair{&report.retrying, written_as::retrying},
                         std::pair{&report.failed, written_as::failed},
                         std::pair{&report.cancelled, written_as::cancelled}})
    for (auto& id : *ids)
      result.emplace(id, as);
  return result;
}

// How the database took `x`: a completion or failure it did not report was
// not current (`all_completed`: it took every completion, nothing failed).
written_as written_as_of(const task_outcome& x,
                         const std::unordered_map<uuid, written_as>& taken,
                         bool all_completed) {
  if (x.kind != task_outcome::completed && x.kind != task_outcome::failed)
    return written_as::released;
  if (all_completed)
    return written_as::completed;
  auto i = taken.find(x.ref.id);
  return i != taken.end() ? i->second : written_as::not_current;
}

// True when the database took every completion of `xs` and there was no
// failure: the usual batch, whose outcomes need no lookup.
bool all_completed(const std::vector<pending_outcome>& xs,
                   const write_report& report) {
  std::size_t completions = 0;
  for (auto& x : xs) {
    if (x.outcome.kind == task_outcome::failed)
      return false;
    completions += x.outcome.kind == task_outcome::completed;
  }
  return report.completed.size() == completions;
}

// Tells every owner of the batch what is written now, and how.
void written(completer_ptr self, const std::vector<pending_outcome>& xs,
             const write_report& report) {
  std::vector<std::pair<channel_actor, std::vector<written_attempt>>> by_owner;
  // A fenced write reports fewer ids than it was given, never more.
  auto every = all_completed(xs, report);
  auto taken = every ? std::unordered_map<uuid, written_as>{} : by_task(report);
  for (auto& x : xs) {
    auto i = std::find_if(by_owner.begin(), by_owner.end(),
                          [&](auto& y) { return y.first == x.owner; });
    if (i == by_owner.end()) {
      by_owner.emplace_back(x.owner, std::vector<written_attempt>{});
      i = by_owner.end() - 1;
    }
    i->second.push_back(
      {x.outcome.ref, written_as_of(x.outcome, taken, every)});
  }
  for (auto& kvp : by_owner)
    self->send(kvp.first, written_atom::value, std::move(kvp.second));
  auto& st = self->state;
  st.writing = false;
  st.retry_delay = std::chrono::milliseconds{0};
  if (!st.pending.empty()) {
    write(self);
    return;
  }
  for (auto& rp : st.flushes)
    rp.deliver(true);
  st.flushes.clear();
}

void write(completer_ptr self) {
  auto& st = self->state;
  auto xs = std::make_shared<std::vector<pending_outcome>>();
  xs->swap(st.pending);
  st.writing = true;
  self
    ->request(st.db, st.ctx->request_timeout(), record_atom::value,
              to_batch(*xs))
    .then([=](const write_report& report) { written(self, *xs, report); },
          [=](caf::error& err) {
            // Put the batch back in front and try again after a backoff.
            auto& st = self->state;
            st.writing = false;
            st.retry_delay = std::min(
              std::chrono::milliseconds{5000},
              std::max(std::chrono::milliseconds{50}, st.retry_delay * 2));
            st.ctx->log(log_level::warning,
                        "writing task outcomes failed, retrying",
                        {{"outcomes", xs->size()},
                         {"retry_ms", st.retry_delay.count()},
                         {"error", render(err)}});
            xs->insert(xs->end(), std::make_move_iterator(st.pending.begin()),
                       std::make_move_iterator(st.pending.end()));
            st.pending = std::move(*xs);
            self->delayed_send(self, st.retry_delay, retry_atom::value);
          });
}

completer_actor::behavior_type completer(completer_ptr self, context_ptr ctx,
                                         database_actor db) {
  self->state.ctx = std::move(ctx);
  self->state.db = std::move(db);
  return {
    [=](record_atom, std::vector<task_outcome>& xs) {
      auto& st = self->state;
      auto owner = caf::actor_cast<channel_actor>(self->current_sender());
      for (auto& x : xs)
        st.pending.push_back({owner, std::move(x)});
      if (!st.writing && st.retry_delay.count() == 0 && !st.pending.empty())
        write(self);
    },
    [=](flush_atom) -> caf::typed_response_promise<bool> {
      auto& st = self->state;
      auto rp = self->make_response_promise<bool>();
      if (!st.writing && st.pending.empty())
        rp.deliver(true);
      else
        st.flushes.push_back(rp);
      return rp;
    },
    [=](peers_atom, database_actor& x) { self->state.db = std::move(x); },
    [=](retry_atom) {
      auto& st = self->state;
      if (!st.writing && !st.pending.empty())
        write(self);
    },
  };
}

} // namespace

completer_actor spawn_completer(caf::actor_system& sys, context_ptr ctx,
                                database_actor db) {
  return sys.spawn(completer, std::move(ctx), std::move(db));
}

} // namespace cafmq::actors
