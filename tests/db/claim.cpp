// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE claim
#include <caf/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cafmq/current_task.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

// Spawns `n` tasks named `name` over `channels` channels in batches.
void spawn_tasks(pqxx::connection_base& conn, const std::string& name, int n,
                 int channels = 1) {
  std::vector<spawn_builder> xs;
  for (int i = 0; i < n; ++i) {
    xs.push_back(spawn_builder{name}.channel_name("c").channel_args(
      std::to_string(i % channels)));
    if (xs.size() == 5000 || i + 1 == n) {
      spawn_or_throw(conn, xs);
      xs.clear();
    }
  }
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(claim_tests, db_fixture)

CAF_TEST(two pollers claim every task exactly once) {
  constexpr int n = 10000;
  spawn_tasks(*conn, "t", n, 100);
  std::mutex mtx;
  std::multiset<std::pair<std::string, int>> claimed; // (id, attempt)
  std::vector<std::string> errors;
  auto run = [&](std::string node) {
    auto q = poller();
    for (;;) {
      auto batch = q->claim(request({"t"}, 32, node));
      if (!batch) {
        std::lock_guard<std::mutex> guard{mtx};
        errors.push_back(render(batch.error()));
        return;
      }
      if (batch->tasks.empty())
        return;
      std::vector<attempt_ref> refs;
      {
        std::lock_guard<std::mutex> guard{mtx};
        for (auto& t : batch->tasks) {
          claimed.emplace(to_string(t.id), t.attempt);
          refs.push_back({t.id, t.attempt});
        }
      }
      if (auto done = q->complete(refs); !done || done->size() != refs.size()) {
        std::lock_guard<std::mutex> guard{mtx};
        errors.push_back("a completion was refused");
        return;
      }
    }
  };
  std::thread a{run, "a"};
  std::thread b{run, "b"};
  a.join();
  b.join();
  CAF_CHECK(errors.empty());
  CAF_CHECK_EQUAL(claimed.size(), static_cast<size_t>(n));
  std::set<std::pair<std::string, int>> unique(claimed.begin(), claimed.end());
  CAF_CHECK_EQUAL(unique.size(), static_cast<size_t>(n));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed' AND attempt = 1"),
                  n);
  // Both pollers did real work.
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                     "node = 'a'"),
                    0);
  CAF_CHECK_GREATER(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                     "node = 'b'"),
                    0);
}

CAF_TEST(a small channel is not starved by a huge one) {
  // One channel with 100,000 ready tasks, 50 channels with one each.
  {
    pqxx::work tx{*conn};
    tx.exec("SELECT cafmq.spawn(json_agg(json_build_object("
            "'id', gen_random_uuid(), 'name', 't', 'channel_name', 'big', "
            "'channel_args', '', 'ordered', false, 'max_attempts', 1, "
            "'backoff_us', 0, 'backoff_cap_us', 0))) "
            "FROM generate_series(1, 100000)");
    tx.commit();
  }
  std::vector<spawn_builder> small;
  for (int i = 0; i < 50; ++i)
    small.push_back(
      spawn_builder{"t"}.channel_name("small").channel_args(std::to_string(i)));
  spawn_or_throw(*conn, small);
  pqxx::nontransaction{*conn}.exec0("ANALYZE cafmq.tasks_live");
  auto q = poller();
  std::set<std::string> small_seen;
  for (int round = 0; round < 2; ++round)
    for (auto& t : claim_or_throw(*q, request({"t"}, 32)).tasks)
      if (t.channel_name == "small")
        small_seen.insert(t.channel_args);
  CAF_CHECK_EQUAL(small_seen.size(), 50u);
}

CAF_TEST(an expired lease makes a running task claimable again) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto first = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(first.tasks.size(), 1u);
  // Lease still valid: nobody else gets it.
  CAF_CHECK(claim_or_throw(*q, request({"t"})).tasks.empty());
  age_task(*conn, id, 3600);
  auto second = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(second.tasks.size(), 1u);
  CAF_CHECK(second.tasks[0].id == id);
  CAF_CHECK_EQUAL(second.tasks[0].attempt, 2);
  auto st = status(*conn, id);
  CAF_CHECK(st->last_error == std::string{"lease expired"});
}

CAF_TEST(a keep alive in time prevents lease expiry) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto req = request({"t"});
  req.lease = std::chrono::seconds{10};
  auto first = claim_or_throw(*q, req);
  CAF_REQUIRE_EQUAL(first.tasks.size(), 1u);
  age_task(*conn, id, 5); // 5 s left on the lease
  current_task task{first.tasks[0], q};
  CAF_CHECK(!task.keep_alive(std::chrono::seconds{60}));
  age_task(*conn, id, 30); // would have expired without the keep-alive
  CAF_CHECK(claim_or_throw(*q, req).tasks.empty());
  CAF_CHECK_EQUAL(state_of(*conn, id), "running");
}

CAF_TEST(stale attempts change nothing) {
  auto id = spawn_builder{"t"}.json(1).spawn(*conn)->id;
  auto q = poller();
  auto first = claim_or_throw(*q, request({"t"})).tasks.at(0);
  age_task(*conn, id, 3600);
  auto second = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE_EQUAL(second.attempt, 2);
  current_task old_task{first, q};
  current_task new_task{second, q};
  // The old attempt can neither complete, checkpoint nor keep alive.
  CAF_CHECK_EQUAL(code_of(old_task.complete()), errc::stale_attempt);
  CAF_CHECK_EQUAL(code_of(old_task.checkpoint(checkpoint{}.json(99))),
                  errc::stale_attempt);
  CAF_CHECK_EQUAL(code_of(old_task.keep_alive(std::chrono::hours{1})),
                  errc::stale_attempt);
  {
    auto c = connect();
    pqxx::work tx{*c};
    tx.exec0("CREATE TABLE side_effect (x int)");
    tx.exec0("INSERT INTO side_effect VALUES (1)");
    CAF_CHECK_EQUAL(code_of(old_task.complete(tx)), errc::stale_attempt);
    // Not committed: the caller's side effects roll back with it, and the
    // call ended tx, so they cannot commit without the completion.
    auto refused = false;
    try {
      tx.commit();
    } catch (const pqxx::usage_error&) {
      refused = true;
    }
    CAF_CHECK(refused);
  }
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM pg_tables WHERE "
                                   "tablename = 'side_effect'"),
                  0);
  auto failed = q->fail({{{first.id, first.attempt}, "late failure", true}});
  CAF_REQUIRE(failed);
  CAF_CHECK(failed->empty());
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "running");
  CAF_CHECK_EQUAL(st->attempt, 2);
  // The current attempt completes; afterwards a rescued old one cannot undo it.
  CAF_CHECK(!new_task.complete());
  CAF_CHECK_EQUAL(code_of(old_task.complete()), errc::stale_attempt);
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
  auto payload = query_value<std::string>("SELECT payload_json::text FROM "
                                          "cafmq.tasks");
  CAF_CHECK_EQUAL(payload, "1");
}

CAF_TEST(a released attempt is pending again and does not count) {
  auto id = spawn_builder{"t"}.retries(0).spawn(*conn)->id;
  auto q = poller();
  auto first = claim_or_throw(*q, request({"t"})).tasks.at(0);
  CAF_REQUIRE_EQUAL(first.attempt, 1);
  auto released = q->release({{id, 1}});
  CAF_REQUIRE(released);
  CAF_CHECK_EQUAL(released->size(), 1u);
  auto st = status(*conn, id);
  CAF_CHECK_EQUAL(to_string(st->state), "pending");
  CAF_CHECK_EQUAL(st->attempt, 0);
  // Claimable at once, and its only attempt is still there.
  auto again = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(again.tasks.size(), 1u);
  CAF_CHECK_EQUAL(again.tasks[0].attempt, 1);
  // Fenced: giving back an attempt that is not current changes nothing.
  CAF_CHECK(!q->complete({{id, 1}})->empty());
  released = q->release({{id, 1}});
  CAF_REQUIRE(released);
  CAF_CHECK(released->empty());
  CAF_CHECK_EQUAL(state_of(*conn, id), "completed");
}

CAF_TEST(a claim asked for pickup returns how long each task was ready) {
  using std::chrono::microseconds;
  auto before = std::chrono::steady_clock::now();
  auto late = spawn_builder{"t"}.spawn(*conn)->id;
  spawn_builder{"t"}.spawn(*conn);
  // Ready five seconds before its spawn.
  pqxx::nontransaction{*conn}.exec_params0(
    "UPDATE cafmq.tasks_live SET run_at = run_at - interval '5 s' WHERE id = "
    "$1",
    to_string(late));
  auto q = poller();
  auto req = request({"t"});
  req.pickup_every = 1;
  auto result = claim_or_throw(*q, req);
  // Both clocks move alike; a millisecond of slack for their rounding.
  auto elapsed = std::chrono::duration_cast<microseconds>(
                   std::chrono::steady_clock::now() - before)
                 + microseconds{1000};
  CAF_REQUIRE_EQUAL(result.tasks.size(), 2u);
  CAF_REQUIRE_EQUAL(result.pickup.size(), 2u);
  for (auto& [i, waited] : result.pickup) {
    auto from
      = result.tasks.at(i).id == late ? microseconds{5000000} : microseconds{0};
    CAF_CHECK_GREATER_OR_EQUAL(waited.count(), from.count());
    CAF_CHECK_LESS_OR_EQUAL(waited.count(), (from + elapsed).count());
  }
  CAF_CHECK_NOT_EQUAL(result.pickup[0].first, result.pickup[1].first);
  // One in 16, by a hash of the id: exactly the tasks the hash picks.
  std::vector<spawn_builder> xs(64, spawn_builder{"t"});
  spawn_or_throw(*conn, xs);
  req.pickup_every = 16;
  req.limit = 64;
  result = claim_or_throw(*q, req);
  std::set<std::string> picked;
  for (auto& [i, waited] : result.pickup)
    picked.insert(to_string(result.tasks.at(i).id));
  std::set<std::string> hashed;
  for (auto& task : result.tasks)
    if (pqxx::nontransaction{*conn}
          .exec_params1("SELECT (hashtext($1) & 2147483647) % 16 = 0",
                        to_string(task.id))[0]
          .as<bool>())
      hashed.insert(to_string(task.id));
  CAF_CHECK_EQUAL(picked, hashed);
  // Not asked for: none.
  spawn_builder{"t"}.spawn(*conn);
  CAF_CHECK(claim_or_throw(*q, request({"t"})).pickup.empty());
}

CAF_TEST(the claim uses indexes with a million pending tasks) {
  {
    pqxx::work tx{*conn};
    tx.exec0(
      "INSERT INTO cafmq.tasks_live (id, seq, name, channel_name, "
      "channel_args, state, ordered, max_attempts, run_at, backoff, "
      "backoff_cap) SELECT gen_random_uuid(), i, 't', 'c', (i % 1000)::text, "
      "'pending', i % 10 = 0, 5, now(), '1 s', '1 h' "
      "FROM generate_series(1, 1000000) i");
    tx.commit();
  }
  pqxx::nontransaction{*conn}.exec0("ANALYZE cafmq.tasks_live");
  pqxx::nontransaction{*conn}.exec0("LOAD 'auto_explain'");
  // Every query inside the claim function, with its plan.
  pqxx::nontransaction tx{*conn};
  tx.exec0("SET auto_explain.log_min_duration = 0");
  tx.exec0("SET auto_explain.log_nested_statements = on");
  tx.exec0("SET auto_explain.log_level = 'NOTICE'");
  tx.exec0("SET client_min_messages = 'NOTICE'");
  struct collector : pqxx::errorhandler {
    explicit collector(pqxx::connection_base& c) : pqxx::errorhandler(c) {}
    bool operator()(const char msg[]) noexcept override {
      text += msg;
      return true;
    }
    std::string text;
  } plans{*conn};
  auto start = std::chrono::steady_clock::now();
  auto rows = tx.exec("SELECT * FROM cafmq.claim('n', '{t}', NULL, NULL, 32, "
                      "'30 s', 5, NULL, NULL)");
  auto elapsed = std::chrono::steady_clock::now() - start;
  CAF_CHECK_EQUAL(rows.size(), 33u);
  CAF_MESSAGE(
    "claim of 32 with 1,000,000 pending took "
    << std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()
    << " us (with plan logging)");
  CAF_CHECK(plans.text.find("Index") != std::string::npos);
  // The big tables are only reached through indexes (the watches table is
  // tiny by design and may be scanned).
  for (auto table : {"Seq Scan on tasks"}) {
    CAF_CHECK(plans.text.find(table) == std::string::npos);
    if (plans.text.find(table) != std::string::npos)
      CAF_MESSAGE(plans.text);
  }
}

CAF_TEST(small channels behind a large backlog cost a claim few reads) {
  // Statistics taken while one channel holds every ready task: a generic
  // plan then thinks a channel's tasks are best found in queue order.
  insert_backlog(*conn, "big", 100000);
  // Two tasks in each of five channels, behind the whole backlog in queue
  // order.
  spawn_tasks(*conn, "t", 10, 5);
  auto claim_small = [](pqxx::transaction_base& tx) {
    auto rows = tx.exec("SELECT * FROM cafmq.claim('n', '{t}', NULL, NULL, "
                        "32, '30 s', 5, NULL, NULL) WHERE channel_name = 'c'");
    CAF_CHECK_EQUAL(rows.size(), 5u);
  };
  auto read = tasks_read(*conn, claim_small);
  CAF_MESSAGE("the claim read " << read << " rows of the task tables");
  CAF_CHECK_LESS(read, 1000);
  // The first task of each small channel locked (another runner is
  // claiming it): the claim looks for the next one.
  auto other = connect();
  pqxx::work locker{*other};
  locker.exec(
    "SELECT id FROM cafmq.tasks_live WHERE channel_name = 'c' ORDER BY "
    "seq LIMIT 5 FOR UPDATE");
  read = tasks_read(*conn, claim_small);
  CAF_MESSAGE("with first tasks locked the claim read " << read << " rows");
  CAF_CHECK_LESS(read, 1000);
}

CAF_TEST(a renewal passes over an attempt being written and keeps it owned) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  auto q = poller();
  auto x = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(x.tasks.size(), 1u);
  std::vector<attempt_ref> refs{{id, x.tasks[0].attempt}};
  auto lease_end = [&] {
    return query_value<std::string>(
      "SELECT run_at::text FROM cafmq.tasks_live WHERE id = '" + to_string(id)
      + "'");
  };
  auto before = lease_end();
  auto other = connect();
  pqxx::work writer{*other};
  writer.exec_params("SELECT 1 FROM cafmq.tasks_live WHERE id = $1 FOR UPDATE",
                     to_string(id));
  // It does not wait for the lock, and reports the attempt still owned.
  auto held = q->keep_alive(refs, std::chrono::hours{1});
  CAF_REQUIRE(held);
  CAF_REQUIRE_EQUAL(held->size(), 1u);
  CAF_CHECK(held->at(0).id == id);
  CAF_CHECK(!held->at(0).ended);
  CAF_CHECK_EQUAL(lease_end(), before);
  writer.abort();
  auto renewed = q->keep_alive(refs, std::chrono::hours{1});
  CAF_REQUIRE(renewed && renewed->size() == 1u);
  CAF_CHECK_NOT_EQUAL(lease_end(), before);
  // Another attempt's renewal changes nothing.
  auto after = lease_end();
  auto stale
    = q->keep_alive({{id, x.tasks[0].attempt + 1}}, std::chrono::hours{2});
  CAF_REQUIRE(stale);
  CAF_CHECK(stale->empty() || stale->at(0).ended);
  CAF_CHECK_EQUAL(lease_end(), after);
}

CAF_TEST(
  renewals completions and failures of the same attempts never deadlock) {
  // Each takes row locks on many attempts: locked in one order (by id),
  // none waits for another in a cycle, whatever order its caller lists
  // them in. Listed in opposite orders, they deadlocked.
  constexpr int n = 1200;
  spawn_tasks(*conn, "t", n);
  auto q = poller();
  std::vector<attempt_ref> refs;
  for (;;) {
    auto x = claim_or_throw(*q, request({"t"}, 500));
    if (x.tasks.empty())
      break;
    for (auto& t : x.tasks)
      refs.push_back({t.id, t.attempt});
  }
  CAF_REQUIRE_EQUAL(refs.size(), static_cast<size_t>(n));
  std::atomic<bool> done{false};
  std::mutex mx;
  std::vector<std::string> errors;
  auto note = [&](const caf::error& err) {
    std::lock_guard<std::mutex> guard{mx};
    errors.push_back(to_string(err));
  };
  std::thread renewer{[&] {
    auto r = poller();
    auto reversed = refs;
    std::reverse(reversed.begin(), reversed.end());
    while (!done)
      if (auto x = r->keep_alive(reversed, std::chrono::seconds{60}); !x)
        note(x.error());
  }};
  // Batches from both ends, each listed against the renewal's order; every
  // third attempt fails (retried or not), the rest complete.
  auto w = poller();
  for (size_t i = 0; i < refs.size() / 2; i += 40) {
    std::vector<attempt_ref> completed;
    std::vector<attempt_failure> failed;
    for (size_t k = i; k < i + 40 && k < refs.size() / 2; ++k)
      for (auto& ref : {refs[k], refs[refs.size() - 1 - k]}) {
        if (k % 3 == 0)
          failed.push_back({ref, "boom", k % 2 == 0, ""});
        else
          completed.push_back(ref);
      }
    if (auto x = w->complete(completed, {}, {}); !x)
      note(x.error());
    if (auto x = w->fail(failed); !x)
      note(x.error());
  }
  done = true;
  renewer.join();
  for (auto& e : errors)
    CAF_MESSAGE("error: " << e);
  CAF_CHECK(errors.empty());
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live"
                                   " WHERE state = 'running'"),
                  0);
}

CAF_TEST_FIXTURE_SCOPE_END()
