// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// A stand-in database actor and a deterministic fixture for runtime tests.
// The queue rules are tested against PostgreSQL in the db suites; these
// tests drive the runtime's actors on CAF's test coordinator with virtual
// time, on the production paths: the supervisor spawns the real children,
// handlers that may block run as the pool's executor jobs (on the test's
// thread: an executor without threads runs its queue when told), and
// non-blocking and actor handlers run on the scheduler.
// Include after defining CAF_SUITE and including caf/test/dsl.hpp.

#include <deque>
#include <map>
#include <set>

#include "cafmq/actors/detail/supervisor.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "runtime/executor.hpp"
#include "runtime/supervisor_state.hpp"

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
  std::vector<claim_request> requests;
  // After `claims` ran out: a backlog of this many "ok" tasks, claimed up to
  // each claim's limit.
  int backlog = 0;
  // Claims fail as if the connection were gone.
  bool fail_claims = false;

  std::vector<write_batch> records;
  bool fail_records = false; // records fail as if the database were down
  int record_calls = 0;      // writes tried, failed ones included
  std::vector<std::vector<attempt_ref>> renewals;
  std::set<uuid> cancel_requested; // reported by renewals
  std::set<uuid> not_owned;        // left out of renewals: lease lost
  std::set<uuid> ended;            // written while a renewal ran
  std::set<uuid> stale_writes;     // not current when their outcome is written
  std::vector<std::pair<attempt_ref, checkpoint>> checkpoints;
  int prunes = 0;
  int expires = 0;
  int schedules = 0;
  std::int64_t prune_answer = 0;
  // Maintenance's upkeep: the ages (ms, -1: none) the next snapshot checks
  // answer (then -1), the vacuums asked for, the indexes they answer, and
  // the indexes rebuilt.
  std::deque<std::int64_t> snapshot_ages;
  int snapshot_checks = 0;
  int vacuums = 0;
  std::vector<std::string> bloated;
  std::vector<std::string> rebuilt;
  // Vacuums when due: the dead-row minimum of each ask, and what the next
  // asks answer (then false: not due).
  std::vector<std::int64_t> vacuum_asks;
  std::deque<bool> vacuum_answers;
  std::vector<spawn_request> spawns;
  // Direct dispatches: the claim each spawn was sent with; whether the
  // stand-in's claim takes the task.
  std::vector<claim_request> dispatches;
  bool dispatch_takes = true;
};

inline claimed_task make_task(std::string name, std::string json = "null") {
  claimed_task t;
  t.id = uuid::random();
  t.name = std::move(name);
  t.channel_name = "default";
  t.attempt = 1;
  t.max_attempts = 5;
  t.payload_json = std::move(json);
  return t;
}

// Stands in for a database actor: the queue rules are tested against
// PostgreSQL in the db suites; here only the runtime's flow matters.
inline database_actor::behavior_type fake_db(database_actor::pointer,
                                             std::shared_ptr<fake_db_log> log) {
  return {
    [=](claim_atom, const claim_request& req) -> caf::result<claim_result> {
      ++log->claim_calls;
      log->claim_limits.push_back(req.limit);
      log->requests.push_back(req);
      if (log->fail_claims)
        return make_error(errc::database_unavailable, "down");
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
    [=](record_atom, const write_batch& batch) -> caf::result<write_report> {
      ++log->record_calls;
      if (log->fail_records)
        return make_error(errc::database_unavailable, "down");
      log->records.push_back(batch);
      // Every current attempt is written as the handler asked; a failure
      // after a cancel was requested ends its task cancelled.
      write_report report;
      for (auto& x : batch.completed)
        if (log->stale_writes.count(x.id) == 0)
          report.completed.push_back(x.id);
      for (auto& x : batch.failed)
        if (log->stale_writes.count(x.ref.id) > 0)
          continue;
        else if (log->cancel_requested.count(x.ref.id) > 0)
          report.cancelled.push_back(x.ref.id);
        else
          (x.retryable ? report.retrying : report.failed).push_back(x.ref.id);
      return report;
    },
    [=](renew_atom, const std::vector<attempt_ref>& refs, caf::timespan) {
      log->renewals.push_back(refs);
      std::vector<lease_state> owned;
      for (auto& x : refs)
        if (log->ended.count(x.id) > 0)
          owned.push_back({x.id, false, true});
        else if (log->not_owned.count(x.id) == 0)
          owned.push_back({x.id, log->cancel_requested.count(x.id) > 0});
      return owned;
    },
    [=](checkpt_atom, const attempt_ref& x, const checkpoint& cp) {
      log->checkpoints.emplace_back(x, cp);
      return true;
    },
    [=](prune_atom, caf::timespan, std::int32_t) {
      ++log->prunes;
      return log->prune_answer;
    },
    [=](expire_atom, std::int32_t) {
      ++log->expires;
      return std::int64_t{0};
    },
    [=](upkeep_atom) {
      ++log->snapshot_checks;
      if (log->snapshot_ages.empty())
        return std::int64_t{-1};
      auto age = log->snapshot_ages.front();
      log->snapshot_ages.pop_front();
      return age;
    },
    [=](upkeep_atom, std::int64_t) {
      ++log->vacuums;
      return log->bloated;
    },
    [=](upkeep_atom, const std::string& index) {
      log->rebuilt.push_back(index);
      return std::int64_t{8192};
    },
    [=](vacuum_atom, std::int64_t min_dead_rows) {
      log->vacuum_asks.push_back(min_dead_rows);
      if (log->vacuum_answers.empty())
        return false;
      auto vacuumed = log->vacuum_answers.front();
      log->vacuum_answers.pop_front();
      return vacuumed;
    },
    [=](pause_atom, const std::string&, const std::string&, bool) {
      return true;
    },
    [=](schedule_atom) {
      ++log->schedules;
      return std::int32_t{0};
    },
    [=](cancel_atom, const uuid&) { return std::string{"requested"}; },
    [=](cancel_atom, const uuid&, const event_sink_actor&) {
      return std::string{"requested"};
    },
    [=](status_atom, const uuid&) -> caf::result<task_status> {
      return make_error(errc::unknown_task, "not in the stand-in");
    },
    [=](spawn_atom, const spawn_request& req, const event_sink_actor&) {
      log->spawns.push_back(req);
      return spawn_reply{req.id ? *req.id : uuid::random(), true};
    },
    [=](spawn_atom, const std::vector<spawn_request>& reqs,
        const event_sink_actor&) {
      std::vector<spawn_reply> result;
      for (const auto& req : reqs) {
        log->spawns.push_back(req);
        result.push_back(spawn_reply{req.id ? *req.id : uuid::random(), true});
      }
      return result;
    },
    [=](spawn_atom, const spawn_request& req, const event_sink_actor&,
        const claim_request& claim) -> caf::result<spawn_reply, claim_result> {
      log->spawns.push_back(req);
      log->dispatches.push_back(claim);
      spawn_reply reply{req.id ? *req.id : uuid::random(), true};
      claim_result claimed;
      if (log->dispatch_takes) {
        claimed.tasks.push_back(make_task(req.name));
        claimed.tasks.back().id = reply.id;
      }
      return {reply, std::move(claimed)};
    },
  };
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
    task_definition quick{
      "quick", [](current_task&) { return caf::error{}; }, {}};
    quick.blocking = false;
    tasks->add(quick);
    cfg.tasks = tasks;
    cfg.node = "test";
    cfg.min_concurrency = 2;
    cfg.max_concurrency = 4;
    cfg.max_poll_wait = 5s;
    cfg.keep_alive_interval = 10s;
    cfg.shutdown_timeout = 30s;
    cfg.maintenance_interval = 1h;
    cfg.schedule_interval = 0s;
    // A fixed claim-ahead (set per test): no throughput estimate.
    cfg.prefetch = 0;
    cfg.prefetch_window = 0s;
    // The log goes to the test's record, not to stderr.
    cfg.log = [logs = logs](const log_record& x) {
      logs->push_back(x);
    };
  }

  ~fixture() {
    if (rt) {
      anon_send_exit(rt, exit_reason::user_shutdown);
      settle();
    }
  }

  // Starts a runtime on stand-in databases and a thread-less executor,
  // and runs until its first claim reached the database (unless `run` is
  // false: then nothing of it has run yet).
  runtime_actor start(bool run = true) {
    runtime_parts parts;
    parts.listener = false;
    parts.make_db = [this](actor_system& sys, db_role role, supervisor_actor) {
      auto db = sys.spawn(fake_db, log);
      switch (role) {
        case db_role::claim:
          claim_db = db;
          break;
        case db_role::claim_ids:
          ids_db = db;
          break;
        case db_role::write:
          write_db = db;
          break;
        case db_role::renew:
          renew_db = db;
          break;
        case db_role::admin:
          admin_db = db;
          break;
        case db_role::upkeep:
          upkeep_db = db;
          break;
      }
      return db;
    };
    parts.make_executor = [this] {
      exec = std::make_shared<executor>(0);
      return exec;
    };
    parts.backend_db = backend_db;
    rt = spawn_runtime(sys, cfg, parts);
    if (run)
      sched.run();
    return rt;
  }

  // The supervisor's state (the runtime's face holds its handle).
  supervisor_state& state() {
    return deref<supervisor_type>(deref<face_type>(rt).state.supervisor).state;
  }

  dispatcher_actor dispatcher() {
    return state().dispatcher;
  }

  // The runtime's restart policy, behind its face.
  supervisor_actor supervisor() {
    return deref<face_type>(rt).state.supervisor;
  }

  // Runs messages and executor jobs until nothing is left (no timers).
  void settle() {
    for (;;) {
      sched.run();
      if (!exec || exec->run_queued() == 0)
        return;
    }
  }

  // Advances virtual time and settles.
  void advance(timespan d) {
    sched.advance_time(d);
    settle();
  }

  // How long after its start a stop cancels running handlers: when the
  // handler grace and the stop's reserve (a fifth of the shutdown timeout,
  // at most 1 s) are left.
  timespan cancel_point() const {
    timespan reserve = std::min<timespan>(1s, cfg.shutdown_timeout / 5);
    return std::max<timespan>(timespan{0}, cfg.shutdown_timeout - reserve
                                             - cfg.handler_grace);
  }

  void notify_cancel(const claimed_task& task) {
    anon_send(dispatcher(), cancel_atom::value, task.channel_name,
              task.channel_args, task.id);
  }

  runner_stats stats() {
    self->send(rt, stats_atom::value);
    settle();
    runner_stats result;
    self->receive([&](const runner_stats& x) { result = x; });
    return result;
  }

  // Asks the runtime to stop; its answer lands in self's mailbox.
  void request_stop() {
    self->send(rt, stop_atom::value);
  }

  bool stop_answered() {
    bool answered = false;
    self->receive([&](bool) { answered = true; },
                  after(std::chrono::seconds{0}) >> [] {});
    return answered;
  }

  std::vector<attempt_failure> failures() const {
    std::vector<attempt_failure> result;
    for (auto& b : log->records)
      result.insert(result.end(), b.failed.begin(), b.failed.end());
    return result;
  }

  std::set<uuid> released_ids() const {
    std::set<uuid> result;
    for (auto& b : log->records)
      for (auto& x : b.released)
        result.insert(x.id);
    return result;
  }

  size_t completed_count() const {
    size_t n = 0;
    for (auto& b : log->records)
      n += b.completed.size();
    return n;
  }

  // True if a log record's message contains `text`.
  bool logged(const std::string& text) const {
    for (auto& x : *logs)
      if (x.message.find(text) != std::string::npos)
        return true;
    return false;
  }

  runner_config cfg;
  std::shared_ptr<fake_db_log> log = std::make_shared<fake_db_log>();
  std::shared_ptr<std::vector<log_record>> logs
    = std::make_shared<std::vector<log_record>>();
  database_actor claim_db;
  database_actor ids_db;
  database_actor write_db;
  database_actor renew_db;
  database_actor admin_db;
  database_actor upkeep_db;
  database_actor backend_db;
  std::shared_ptr<executor> exec;
  runtime_actor rt;
};

} // namespace cafmq::test
