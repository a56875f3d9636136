#pragma once

// A stand-in database actor and a deterministic fixture for runtime tests.
// The queue rules are tested against PostgreSQL in the db suites; these
// tests drive the actors' flow on CAF's test coordinator with virtual time.
// Include after defining CAF_SUITE and including caf/test/dsl.hpp.

#include <deque>
#include <map>
#include <set>

#include "cafmq/actors/dispatcher.hpp"
#include "cafmq/actors/messages.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"

namespace cafmq::test {

using namespace caf;
using namespace cafmq::actors;
using namespace std::chrono_literals;

// What the stand-in database saw and what it answers.
struct fake_db_log {
  std::deque<claim_result> claims; // answers, in order; then empty batches
  std::chrono::microseconds idle_wait = 60s;
  int claim_calls = 0;
  std::vector<int> claim_limits; // the limit of each claim
  // After `claims` ran out: a backlog of this many "ok" tasks, claimed up to
  // each claim's limit.
  int backlog = 0;

  std::vector<write_batch> records;
  bool fail_records = false; // records fail as if the database were down
  std::vector<std::vector<attempt_ref>> renewals;
  std::set<uuid> cancel_requested; // reported by renewals
  int prunes = 0;
  int expires = 0;
  std::int64_t prune_answer = 0;
};

inline claimed_task make_task(std::string name, std::string json = "null") {
  claimed_task t;
  t.id = uuid::random();
  t.name = std::move(name);
  t.attempt = 1;
  t.max_attempts = 5;
  t.payload_json = std::move(json);
  return t;
}

// Stands in for a database actor: the queue rules are tested against
// PostgreSQL in the db suites; here only the runtime's flow matters.
inline behavior fake_db(event_based_actor*, std::shared_ptr<fake_db_log> log) {
  return {
    [=](claim_atom, const claim_request& req) {
      ++log->claim_calls;
      log->claim_limits.push_back(req.limit);
      if (log->claims.empty() && log->backlog > 0) {
        claim_result batch;
        for (; log->backlog > 0
               && static_cast<int>(batch.tasks.size()) < req.limit;
             --log->backlog)
          batch.tasks.push_back(make_task("ok"));
        return batch;
      }
      if (log->claims.empty()) {
        claim_result idle;
        idle.wait = log->idle_wait;
        return idle;
      }
      auto result = std::move(log->claims.front());
      log->claims.pop_front();
      return result;
    },
    [=](record_atom, const write_batch& batch) -> result<bool> {
      if (log->fail_records)
        return make_error(errc::database_unavailable, "down");
      log->records.push_back(batch);
      return true;
    },
    [=](renew_atom, const std::vector<attempt_ref>& refs,
        std::chrono::milliseconds) {
      log->renewals.push_back(refs);
      std::vector<lease_state> owned;
      for (auto& x : refs)
        owned.push_back({x.id, log->cancel_requested.count(x.id) > 0});
      return owned;
    },
    [=](prune_atom, std::chrono::milliseconds, int) {
      ++log->prunes;
      return log->prune_answer;
    },
    [=](expire_atom, int) {
      ++log->expires;
      return std::int64_t{0};
    },
  };
}

// Handler actors for the supervision tests.
inline behavior good_handler(event_based_actor*) {
  return {[](run_atom, const claimed_task&) {
    return true;
  }};
}

inline behavior throwing_handler(event_based_actor*) {
  return {[](run_atom, const claimed_task&) -> bool {
    throw std::runtime_error("kaputt");
  }};
}

inline behavior refusing_handler(event_based_actor*) {
  return {[](run_atom, const claimed_task&) -> result<bool> {
    return make_error(errc::payload_mismatch, "cannot read this");
  }};
}

inline behavior quitting_handler(event_based_actor* self) {
  return {[=](run_atom, const claimed_task&) {
    self->quit(make_error(errc::handler_failed, "gave up"));
  }};
}

struct fixture : test_coordinator_fixture<> {
  fixture() {
    auto tasks = std::make_shared<registry>();
    tasks->add({"ok", [](current_task&) { return caf::error{}; }, {}});
    tasks->add(
      {"boom",
       [](current_task&) -> caf::error { throw std::runtime_error("boom"); },
       {}});
    tasks->add({"typed",
                [](current_task& t) -> caf::error {
                  auto x = t.json<int>();
                  return x ? caf::error{} : x.error();
                },
                {}});
    cfg.tasks = tasks;
    cfg.node = "test";
    cfg.min_concurrency = 2;
    cfg.max_concurrency = 4;
    cfg.detached_workers = false;
    cfg.max_poll_wait = 5s;
    cfg.keep_alive_interval = 10s;
    cfg.shutdown_timeout = 30s;
    // A fixed claim-ahead (set per test): no throughput estimate.
    cfg.prefetch = 0;
    cfg.prefetch_window = 0s;
    db = sys.spawn(fake_db, log);
  }

  // Starts a dispatcher that claims one task, keeps it running (its worker
  // does not run yet) and is asked to stop.
  actor start_and_stop_with_one_running() {
    claim_result batch;
    batch.tasks = {make_task("ok")};
    log->claims.push_back(batch);
    cfg.max_poll_wait = 1h;
    cfg.keep_alive_interval = 1h;
    auto d = start();
    expect((claim_atom, claim_request), to(db));
    expect((claim_result), from(db).to(d));
    run_until_a_worker_is_next();
    self->send(d, stop_atom::value);
    expect((stop_atom), from(self).to(d));
    return d;
  }

  bool worker_is_next() {
    auto ptr = dynamic_cast<local_actor*>(sched.jobs.front());
    return ptr != nullptr && std::string{ptr->name()} == "cafmq.worker";
  }

  // Runs the runtime until a worker's job is next: the pool has started an
  // attempt, whose handler has not run yet.
  void run_until_a_worker_is_next() {
    while (sched.has_job()) {
      if (worker_is_next())
        return;
      sched.run_once();
    }
    CAF_FAIL("no attempt started");
  }

  // Runs every job but the workers': started handlers do not run.
  void run_all_but_workers() {
    for (size_t skipped = 0; sched.has_job() && skipped < sched.jobs.size();) {
      if (worker_is_next()) {
        sched.jobs.push_back(sched.jobs.front());
        sched.jobs.pop_front();
        ++skipped;
      } else {
        sched.run_once();
        skipped = 0;
      }
    }
  }

  actor start() {
    auto d = spawn_dispatcher(sys, cfg, db, db, false);
    // Runs the dispatcher's initialization and its first message (rescan),
    // which sends the first claim to the database.
    sched.prioritize(d);
    sched.run_once();
    return d;
  }

  runner_config cfg;
  std::shared_ptr<fake_db_log> log = std::make_shared<fake_db_log>();
  actor db;
};

inline size_t completed_count(const fake_db_log& log) {
  size_t n = 0;
  for (auto& b : log.records)
    n += b.completed.size();
  return n;
}

} // namespace cafmq::test
