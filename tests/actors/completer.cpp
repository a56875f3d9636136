// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE completer
#include <caf/test/dsl.hpp>

#include "cafmq/actors/detail/completer.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct completer_fixture : unit_fixture {
  completer_fixture() {
    completer = keep(spawn_completer(sys, context(), db));
  }

  // Sends outcomes to the completer as `owner` does, without running them.
  void record(const channel_actor& owner, std::vector<task_outcome> xs) {
    send_as(owner, completer, record_atom::value, std::move(xs));
  }

  std::vector<std::vector<attempt_ref>> written(const channel_actor& owner) {
    return deref<channel_stand_in>(owner).state.written;
  }

  database_actor db = stand_in_db(log);
  channel_actor owner = stand_in(stand_in_channel);
  channel_actor other = stand_in(stand_in_channel);
  completer_actor completer;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(completer_tests, completer_fixture)

CAF_TEST(the first outcome goes alone and what comes meanwhile goes next) {
  record(owner, {outcome(a, task_outcome::completed)});
  expect((record_atom, std::vector<task_outcome>), from(owner).to(completer));
  // The first write is in flight: these wait for it.
  record(owner, {outcome(b, task_outcome::completed)});
  record(other, {outcome(c, task_outcome::completed)});
  expect((record_atom, std::vector<task_outcome>), from(owner).to(completer));
  expect((record_atom, std::vector<task_outcome>), from(other).to(completer));
  CAF_CHECK_EQUAL(log->records.size(), 0u);
  sched.run();
  CAF_REQUIRE_EQUAL(log->records.size(), 2u);
  CAF_CHECK_EQUAL(log->records[0].completed, refs{ref_of(a)});
  CAF_CHECK_EQUAL(log->records[1].completed, (refs{ref_of(b), ref_of(c)}));
  CAF_CHECK_EQUAL(log->record_calls, 2);
}

CAF_TEST(each owner hears only its own written attempts) {
  record(owner, {outcome(a, task_outcome::completed)});
  expect((record_atom, std::vector<task_outcome>), from(owner).to(completer));
  // b and c go in one batch.
  record(owner, {outcome(b, task_outcome::failed, "boom")});
  record(other, {outcome(c, task_outcome::released)});
  sched.run();
  CAF_REQUIRE_EQUAL(log->records.size(), 2u);
  auto& batch = log->records[1];
  CAF_CHECK_EQUAL(batch.completed.size(), 0u);
  CAF_REQUIRE_EQUAL(batch.failed.size(), 1u);
  CAF_CHECK_EQUAL(batch.failed[0].ref, ref_of(b));
  CAF_CHECK_EQUAL(batch.failed[0].error, "boom");
  CAF_CHECK_EQUAL(batch.failed[0].retryable, true);
  CAF_CHECK_EQUAL(batch.released, refs{ref_of(c)});
  CAF_CHECK_EQUAL(written(owner),
                  (std::vector<refs>{{ref_of(a)}, {ref_of(b)}}));
  CAF_CHECK_EQUAL(written(other), std::vector<refs>{{ref_of(c)}});
}

CAF_TEST(each owner hears how the database took each of its outcomes) {
  log->stale_writes = {c.id};
  auto for_good = outcome(b, task_outcome::failed, "boom");
  for_good.retryable = false;
  record(owner, {outcome(a, task_outcome::completed), for_good,
                 outcome(c, task_outcome::completed)});
  sched.run();
  CAF_CHECK(
    deref<channel_stand_in>(owner).state.written_as_told
    == (std::vector<written_as>{written_as::completed, written_as::failed,
                                written_as::not_current}));
  record(other, {outcome(a, task_outcome::failed, "again"),
                 outcome(b, task_outcome::released)});
  sched.run();
  CAF_CHECK(
    deref<channel_stand_in>(other).state.written_as_told
    == (std::vector<written_as>{written_as::retrying, written_as::released}));
  // Completions only, one of them fenced out.
  record(other, {outcome(a, task_outcome::completed),
                 outcome(c, task_outcome::completed)});
  sched.run();
  auto& told = deref<channel_stand_in>(other).state.written_as_told;
  CAF_REQUIRE_EQUAL(told.size(), 4u);
  CAF_CHECK(told[2] == written_as::completed);
  CAF_CHECK(told[3] == written_as::not_current);
}

CAF_TEST(a failed write is retried with backoff and loses nothing) {
  log->fail_records = true;
  record(owner, {outcome(a, task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(log->record_calls, 1);
  advance(50ms - 1us);
  CAF_CHECK_EQUAL(log->record_calls, 1);
  advance(1us);
  CAF_CHECK_EQUAL(log->record_calls, 2);
  // The backoff doubles; what comes meanwhile waits for the retry.
  record(other, {outcome(b, task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(log->record_calls, 2);
  advance(100ms - 1us);
  CAF_CHECK_EQUAL(log->record_calls, 2);
  log->fail_records = false;
  advance(1us);
  CAF_CHECK_EQUAL(log->record_calls, 3);
  CAF_REQUIRE_EQUAL(log->records.size(), 1u);
  CAF_CHECK_EQUAL(log->records[0].completed, (refs{ref_of(a), ref_of(b)}));
  CAF_CHECK_EQUAL(written(owner), std::vector<refs>{{ref_of(a)}});
  CAF_CHECK_EQUAL(written(other), std::vector<refs>{{ref_of(b)}});
  // Back to no delay once a write went through.
  record(owner, {outcome(c, task_outcome::completed)});
  sched.run();
  CAF_CHECK_EQUAL(log->record_calls, 4);
}

CAF_TEST(flush answers only when everything is written) {
  self->send(completer, flush_atom::value);
  sched.run();
  CAF_CHECK_EQUAL(answer<bool>(), true);
  log->fail_records = true;
  record(owner, {outcome(a, task_outcome::completed)});
  sched.run();
  self->send(completer, flush_atom::value);
  sched.run();
  CAF_CHECK(!next<bool>());
  log->fail_records = false;
  // `b` comes during the backoff and goes with the retry.
  record(owner, {outcome(b, task_outcome::completed)});
  advance(50ms);
  CAF_REQUIRE_EQUAL(log->records.size(), 1u);
  CAF_CHECK_EQUAL(log->records[0].completed, (refs{ref_of(a), ref_of(b)}));
  CAF_CHECK_EQUAL(answer<bool>(), true);
}

CAF_TEST(flush waits for a write in flight and what comes after it) {
  record(owner, {outcome(a, task_outcome::completed)});
  expect((record_atom, std::vector<task_outcome>), from(owner).to(completer));
  self->send(completer, flush_atom::value);
  expect((flush_atom), from(_).to(completer));
  record(owner, {outcome(b, task_outcome::completed)});
  expect((record_atom, std::vector<task_outcome>), from(owner).to(completer));
  CAF_CHECK(!next<bool>());
  // The first write ends: the second one starts; flush still waits.
  expect((record_atom, write_batch), from(completer).to(db));
  expect((write_report), from(db).to(completer));
  CAF_CHECK(!next<bool>());
  sched.run();
  CAF_CHECK_EQUAL(log->records.size(), 2u);
  CAF_CHECK_EQUAL(answer<bool>(), true);
}

CAF_TEST(a new database is used for the next write) {
  log->fail_records = true;
  record(owner, {outcome(a, task_outcome::completed)});
  sched.run();
  auto next_log = std::make_shared<fake_db_log>();
  auto next_db = stand_in_db(next_log);
  anon_send(completer, peers_atom::value, next_db);
  sched.run();
  advance(50ms);
  CAF_CHECK_EQUAL(log->record_calls, 1);
  CAF_REQUIRE_EQUAL(next_log->records.size(), 1u);
  CAF_CHECK_EQUAL(next_log->records[0].completed, refs{ref_of(a)});
  CAF_CHECK_EQUAL(written(owner), std::vector<refs>{{ref_of(a)}});
}

CAF_TEST_FIXTURE_SCOPE_END()
