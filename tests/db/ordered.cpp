// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE ordered
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;

namespace {

struct run_log {
  std::mutex mtx;
  std::vector<int> order;
  int running = 0;
  int overlaps = 0;
  std::vector<std::string> errors;
};

// Two pollers drain the ordered tasks, recording payload order and overlap.
void drain_with_two_pollers(db_fixture& f, run_log& log) {
  auto run = [&](std::string node) {
    auto q = f.poller();
    int idle = 0;
    while (idle < 20) {
      auto batch = q->claim(request({"o"}, 8, node));
      if (!batch) {
        std::lock_guard<std::mutex> guard{log.mtx};
        log.errors.push_back(render(batch.error()));
        return;
      }
      if (batch->tasks.empty()) {
        // The other poller may hold the head; look again a few times.
        ++idle;
        std::this_thread::yield();
        continue;
      }
      idle = 0;
      for (auto& t : batch->tasks) {
        {
          std::lock_guard<std::mutex> guard{log.mtx};
          if (++log.running > 1)
            ++log.overlaps;
          log.order.push_back(
            nlohmann::json::parse(*t.payload_json).get<int>());
        }
        std::this_thread::yield();
        {
          std::lock_guard<std::mutex> guard{log.mtx};
          --log.running;
        }
        auto done = q->complete({{t.id, t.attempt}});
        if (!done || done->size() != 1) {
          std::lock_guard<std::mutex> guard{log.mtx};
          log.errors.push_back("completion refused");
        }
      }
    }
  };
  std::thread a{run, "a"};
  std::thread b{run, "b"};
  a.join();
  b.join();
}

std::vector<int> iota(int n) {
  std::vector<int> result(n);
  for (int i = 0; i < n; ++i)
    result[i] = i;
  return result;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(ordered_tests, db_fixture)

CAF_TEST(ordered tasks run in spawn order and never overlap) {
  constexpr int n = 1000;
  // Spawned one statement at a time, as separate transactions.
  for (int i = 0; i < n; ++i)
    CAF_REQUIRE(
      spawn_builder{"o"}.channel_name("seq").ordered().json(i).spawn(*conn));
  run_log log;
  drain_with_two_pollers(*this, log);
  CAF_CHECK(log.errors.empty());
  CAF_CHECK_EQUAL(log.overlaps, 0);
  CAF_CHECK(log.order == iota(n));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE "
                                   "state = 'completed'"),
                  n);
}

CAF_TEST(batch spawn keeps array order for ordered tasks) {
  constexpr int n = 1000;
  std::vector<spawn_builder> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back(spawn_builder{"o"}.channel_name("seq").ordered().json(i));
  spawn_or_throw(*conn, xs);
  run_log log;
  drain_with_two_pollers(*this, log);
  CAF_CHECK(log.errors.empty());
  CAF_CHECK_EQUAL(log.overlaps, 0);
  CAF_CHECK(log.order == iota(n));
}

CAF_TEST(concurrent spawners cannot commit positions out of order) {
  // Two transactions append to one ordered channel; the first holds its
  // position open while the second tries to append behind it.
  auto c1 = connect();
  auto c2 = connect();
  pqxx::work t1{*c1};
  CAF_REQUIRE(
    spawn_builder{"o"}.channel_name("race").ordered().json(0).spawn(t1));
  std::atomic<bool> second_done{false};
  std::thread other{[&] {
    pqxx::work t2{*c2};
    auto r
      = spawn_builder{"o"}.channel_name("race").ordered().json(1).spawn(t2);
    t2.commit();
    second_done = static_cast<bool>(r);
  }};
  // The second spawner waits for the first one's channel lock.
  while (query_value<int>("SELECT count(*) FROM pg_locks WHERE locktype = "
                          "'advisory' AND NOT granted")
         == 0)
    std::this_thread::yield();
  CAF_CHECK(!second_done);
  t1.commit();
  other.join();
  CAF_CHECK(second_done);
  auto q = poller();
  auto first = claim_or_throw(*q, request({"o"}));
  CAF_REQUIRE_EQUAL(first.tasks.size(), 1u);
  CAF_CHECK_EQUAL(*first.tasks[0].payload_json, "0");
}

CAF_TEST(a failed head does not block its successors) {
  auto head_id = uuid::random();
  auto head = spawn_builder{"o"}
                .id(head_id)
                .channel_name("c")
                .ordered()
                .retries(0)
                .json(0);
  auto next_id = uuid::random();
  auto next
    = spawn_builder{"o"}.id(next_id).channel_name("c").ordered().json(1);
  spawn_or_throw(*conn, {head, next});
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"o"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == head_id);
  // While the head waits for a retry, its successor stays blocked.
  CAF_REQUIRE(q->fail({{{head_id, 1}, "boom", true}}));
  CAF_CHECK_EQUAL(state_of(*conn, head_id), "failed");
  batch = claim_or_throw(*q, request({"o"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next_id);
}

CAF_TEST(a cancelled head does not block its successors) {
  auto head_id = uuid::random();
  auto head = spawn_builder{"o"}.id(head_id).channel_name("c").ordered();
  auto next_id = uuid::random();
  auto next = spawn_builder{"o"}.id(next_id).channel_name("c").ordered();
  spawn_or_throw(*conn, {head, next});
  // The cancel API comes with cancellation; the state is what counts here.
  {
    pqxx::work tx{*conn};
    finish_by_hand(tx, "id = '" + to_string(head_id) + "'", "cancelled");
    tx.commit();
  }
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"o"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == next_id);
}

CAF_TEST(a retrying head keeps its successors waiting) {
  auto head_id = uuid::random();
  auto head
    = spawn_builder{"o"}.id(head_id).channel_name("c").ordered().retries(3);
  auto next_id = uuid::random();
  auto next = spawn_builder{"o"}.id(next_id).channel_name("c").ordered();
  spawn_or_throw(*conn, {head, next});
  auto q = poller();
  CAF_REQUIRE_EQUAL(claim_or_throw(*q, request({"o"})).tasks.size(), 1u);
  CAF_REQUIRE(q->fail({{{head_id, 1}, "boom", true}}));
  CAF_CHECK_EQUAL(state_of(*conn, head_id), "pending");
  CAF_CHECK(claim_or_throw(*q, request({"o"})).tasks.empty());
  age_task(*conn, head_id, 3600);
  auto batch = claim_or_throw(*q, request({"o"}));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 1u);
  CAF_CHECK(batch.tasks[0].id == head_id);
  CAF_CHECK_EQUAL(batch.tasks[0].attempt, 2);
}

CAF_TEST(different channel args are separate chains) {
  std::vector<spawn_builder> xs;
  for (int args = 0; args < 3; ++args)
    for (int i = 0; i < 2; ++i)
      xs.push_back(spawn_builder{"o"}
                     .channel_name("c")
                     .channel_args(std::to_string(args))
                     .ordered()
                     .json(i));
  spawn_or_throw(*conn, xs);
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"o"}));
  // One head per chain runs at once, and only heads.
  CAF_REQUIRE_EQUAL(batch.tasks.size(), 3u);
  for (auto& t : batch.tasks)
    CAF_CHECK_EQUAL(*t.payload_json, "0");
}

CAF_TEST(channels that share an index key are still separate chains) {
  // Two args of one name whose 24 bits of the key agree: one key in the
  // indexes (cafmq.channel_index_key), two channels.
  auto pair = pqxx::nontransaction{*conn}.exec1(
    "SELECT x.a, y.a FROM (SELECT 'k' || i AS a, cafmq.channel_index_key("
    "'c', 'k' || i) AS k FROM generate_series(1, 20000) i) x JOIN (SELECT "
    "'k' || i AS a, cafmq.channel_index_key('c', 'k' || i) AS k FROM "
    "generate_series(1, 20000) i) y ON x.k = y.k AND x.a < y.a "
    "ORDER BY x.a, y.a LIMIT 1");
  std::vector<std::string> args{pair[0].as<std::string>(),
                                pair[1].as<std::string>()};
  std::vector<spawn_builder> xs;
  for (int i = 0; i < 3; ++i)
    for (const auto& a : args) {
      xs.push_back(
        spawn_builder{"o"}.channel_name("c").channel_args(a).ordered().json(i));
      xs.push_back(
        spawn_builder{"o"}.channel_name("c").channel_args(a).json(10 + i));
    }
  spawn_or_throw(*conn, xs);
  auto q = poller();
  std::map<std::string, std::vector<std::string>> ordered_runs;
  int runs = 0;
  for (int round = 0; round < 10 && runs < 12; ++round) {
    auto batch = claim_or_throw(*q, request({"o"}));
    std::vector<attempt_ref> done;
    int heads = 0;
    for (auto& t : batch.tasks) {
      if (t.ordered) {
        ordered_runs[t.channel_args].push_back(*t.payload_json);
        ++heads;
      }
      done.push_back({t.id, t.attempt});
    }
    // Both heads at once: neither chain waits behind the other.
    if (round < 3)
      CAF_CHECK_EQUAL(heads, 2);
    runs += static_cast<int>(done.size());
    CAF_REQUIRE(q->complete(done));
  }
  CAF_CHECK_EQUAL(runs, 12);
  for (const auto& a : args)
    CAF_CHECK_EQUAL(ordered_runs[a], (std::vector<std::string>{"0", "1", "2"}));
}

CAF_TEST_FIXTURE_SCOPE_END()
