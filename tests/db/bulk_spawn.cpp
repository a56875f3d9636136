// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE bulk_spawn
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cafmq/error.hpp"
#include "cafmq/spawn.hpp"

#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

// spawn_many writes a batch of 500 or more tasks without unique keys with
// COPY, smaller ones and ones with unique keys through cafmq.spawn. These
// tests hold the COPY path to the function's results.

namespace {

constexpr int batch_size = 500;

// Task i of a batch: every option and payload shape in turn.
spawn_builder varied(int i) {
  auto x = spawn_builder{"bulk-" + std::to_string(i % 7)};
  switch (i % 6) {
    case 0:
      x.channel_name("plain").json(i);
      break;
    case 1:
      x.channel_name("ord").channel_args(i % 2 ? "a" : "b").ordered(true);
      x.raw_json(
        "{\"text\": \"tab\\there\\nline \\\\ back \\u00e9 \\\"q\\\"\"}");
      break;
    case 2: {
      std::string bytes;
      for (int b = 0; b < 256; ++b)
        bytes += static_cast<char>((b + i) % 256);
      x.channel_name("bin").bytes(bytes).delay(std::chrono::seconds{30 + i});
      break;
    }
    case 3:
      x.channel_name("opts\ttab")
        .channel_args("a\\b\nc")
        .retries(9)
        .backoff(250ms)
        .backoff_cap(90s)
        .jitter(retry_jitter::equal)
        .priority(40 + i)
        .timeout(1500ms)
        .deadline(spawn_builder::clock::now() + 3h);
      break;
    case 4:
      x.channel_name("two-phase").commit_interval(45s).json("reserved");
      break;
    default:
      x.channel_name("later")
        .run_at(spawn_builder::clock::time_point{}
                + std::chrono::seconds{4102444800 + i})
        .raw_json("[]");
      break;
  }
  return x;
}

std::vector<spawn_builder> varied_batch(int n) {
  std::vector<spawn_builder> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back(varied(i));
  return xs;
}

// Everything of a task row and its payload that does not depend on when or
// under which id it was spawned; times relative to the spawn's now().
std::string row_of(pqxx::connection_base& conn, const uuid& id) {
  pqxx::nontransaction tx{conn};
  auto r = tx.exec_params1(
    "SELECT row(t.name, t.channel_name, t.channel_args, t.state, t.ordered, "
    "t.attempt, t.max_attempts, "
    "CASE WHEN t.run_at >= '2099-01-01' THEN t.run_at::text "
    "ELSE round(extract(epoch FROM t.run_at - t.created_at), 3)::text END, "
    "t.backoff, t.backoff_cap, t.backoff_jitter, "
    "round(extract(epoch FROM t.commit_deadline - t.created_at), 3), "
    "t.timeout, t.deadline IS NULL, t.unique_key, t.cancel_requested, "
    "t.node, t.lost_attempts, t.attempt_base, t.priority, t.result, "
    "t.payload_json, encode(t.payload_bytes, 'hex'))::text "
    "FROM cafmq.tasks t "
    "WHERE t.id = $1",
    to_string(id));
  return r[0].as<std::string>();
}

int count_tasks(pqxx::connection_base& conn) {
  return pqxx::nontransaction{conn}
    .exec1("SELECT count(*) FROM cafmq.tasks")[0]
    .as<int>();
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(bulk_spawn_tests, db_fixture)

CAF_TEST(a batch written with COPY holds what the spawn function writes) {
  auto big = spawn_or_throw(*conn, varied_batch(batch_size));
  CAF_REQUIRE_EQUAL(big.size(), static_cast<size_t>(batch_size));
  // The same tasks one at a time: each a batch of one, through cafmq.spawn.
  for (int i = 0; i < batch_size; ++i) {
    auto one = spawn_or_throw(*conn, {varied(i)});
    CAF_REQUIRE_EQUAL(one.size(), 1u);
    CAF_CHECK(big[i].created);
    auto copied = row_of(*conn, big[i].id);
    auto inserted = row_of(*conn, one[0].id);
    if (copied != inserted)
      CAF_FAIL("task " << i << " differs:\n  COPY:     " << copied
                       << "\n  function: " << inserted);
  }
  // Queue positions follow the batch's order.
  CAF_CHECK_EQUAL(count_tasks(*conn), 2 * batch_size);
  pqxx::nontransaction tx{*conn};
  auto ordered = tx.exec("SELECT id FROM cafmq.tasks ORDER BY seq LIMIT "
                         + std::to_string(batch_size));
  for (int i = 0; i < batch_size; ++i)
    CAF_CHECK_EQUAL(ordered[i][0].as<std::string>(), to_string(big[i].id));
}

CAF_TEST(a COPY batch that leaves the defaults to the table holds the same) {
  // Every task with the default options (attempts, backoff, due now): the
  // COPY leaves those columns to the live table's defaults.
  auto plain = [](int i) {
    auto x = spawn_builder{"plain-" + std::to_string(i % 3)};
    x.channel_name(i % 2 ? "p" : "").channel_args(i % 5 ? "" : "a\tb");
    switch (i % 4) {
      case 0:
        x.json(i);
        break;
      case 1:
        x.bytes(std::string{"\0\x01\xff\\", 4});
        break;
      case 2:
        x.priority(i);
        break;
      default:
        break;
    }
    return x;
  };
  std::vector<spawn_builder> xs;
  for (int i = 0; i < batch_size; ++i)
    xs.push_back(plain(i));
  auto big = spawn_or_throw(*conn, xs);
  CAF_REQUIRE_EQUAL(big.size(), static_cast<size_t>(batch_size));
  for (int i = 0; i < batch_size; ++i) {
    auto one = spawn_or_throw(*conn, {plain(i)});
    auto copied = row_of(*conn, big[i].id);
    auto inserted = row_of(*conn, one[0].id);
    if (copied != inserted)
      CAF_FAIL("task " << i << " differs:\n  COPY:     " << copied
                       << "\n  function: " << inserted);
  }
  // Due at once, as the function's: run_at is the spawn's now().
  CAF_CHECK_EQUAL(pqxx::nontransaction{*conn}
                    .exec1("SELECT count(*) FROM cafmq.tasks "
                           "WHERE run_at = created_at")[0]
                    .as<int>(),
                  2 * batch_size);
}

CAF_TEST(the tasks of a COPY batch are claimed with their payloads) {
  std::vector<spawn_builder> xs;
  for (int i = 0; i < batch_size; ++i)
    xs.push_back(spawn_builder{"bulk"}.json(i));
  auto ids = spawn_or_throw(*conn, xs);
  auto q = poller();
  auto batch = claim_or_throw(*q, request({"bulk"}, batch_size));
  CAF_REQUIRE_EQUAL(batch.tasks.size(), static_cast<size_t>(batch_size));
  for (int i = 0; i < batch_size; ++i) {
    CAF_CHECK(batch.tasks[i].id == ids[i].id);
    CAF_CHECK_EQUAL(batch.tasks[i].payload_json.value_or(""),
                    std::to_string(i));
  }
}

CAF_TEST(a COPY batch in a transaction of the caller is all or nothing) {
  {
    pqxx::work tx{*conn};
    auto result = spawn_many(tx, varied_batch(batch_size));
    CAF_REQUIRE(result);
    CAF_CHECK_EQUAL(result->size(), static_cast<size_t>(batch_size));
    // Not committed: rolled back here.
  }
  CAF_CHECK_EQUAL(count_tasks(*conn), 0);
  // An id that exists refuses the whole batch with duplicate_id.
  auto taken = uuid::random();
  CAF_REQUIRE(spawn_builder{"x"}.id(taken).spawn(*conn));
  auto xs = varied_batch(batch_size);
  xs[batch_size - 1].id(taken);
  auto again = spawn_many(*conn, xs);
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(code_of(again.error()), errc::duplicate_id);
  CAF_CHECK_EQUAL(count_tasks(*conn), 1);
  // A batch with a unique key takes the function's path and its rules.
  xs = varied_batch(batch_size);
  xs[3].unique_key("only-once");
  xs[490] = spawn_builder{"x"}.unique_key("only-once");
  auto keyed = spawn_or_throw(*conn, xs);
  CAF_CHECK(keyed[3].created);
  CAF_CHECK(!keyed[490].created);
  CAF_CHECK(keyed[490].id == keyed[3].id);
  CAF_CHECK_EQUAL(count_tasks(*conn), batch_size);
}

CAF_TEST(COPY batches of one ordered channel queue in commit order) {
  auto batch_of = [](const std::string& tag) {
    std::vector<spawn_builder> xs;
    for (int i = 0; i < batch_size; ++i)
      xs.push_back(spawn_builder{"ord"}.channel_name("line").ordered(true).json(
        tag + std::to_string(i)));
    return xs;
  };
  auto first = connect();
  pqxx::work tx{*first};
  CAF_REQUIRE(spawn_many(tx, batch_of("a")));
  // A second spawner of the same channel waits for the ordering lock.
  std::atomic<bool> second_done{false};
  std::thread second{[&] {
    auto c = connect();
    spawn_or_throw(*c, batch_of("b"));
    second_done = true;
  }};
  auto waiting = [&] {
    return query_value<int>("SELECT count(*) FROM pg_locks WHERE locktype = "
                            "'advisory' AND NOT granted")
           > 0;
  };
  for (int i = 0; i < 2000 && !waiting(); ++i)
    std::this_thread::sleep_for(5ms);
  CAF_CHECK(waiting());
  CAF_CHECK(!second_done);
  tx.commit();
  second.join();
  CAF_CHECK(second_done);
  // Every task of the first batch queues before every task of the second.
  pqxx::nontransaction check{*conn};
  auto r = check.exec1(
    "SELECT max(t.seq) FILTER (WHERE t.payload_json #>> '{}' LIKE 'a%'), "
    "min(t.seq) FILTER (WHERE t.payload_json #>> '{}' LIKE 'b%'), count(*) "
    "FROM cafmq.tasks t");
  CAF_CHECK_LESS(r[0].as<long>(), r[1].as<long>());
  CAF_CHECK_EQUAL(r[2].as<int>(), 2 * batch_size);
}

CAF_TEST_FIXTURE_SCOPE_END()
