// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE hostile_input
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "cafmq/actors/runner.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/error.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// Strings that break a query built by concatenation, or a shell, or a log.
const std::vector<std::string> hostile = {
  "x'); DROP TABLE cafmq.tasks; --",          "\"; SELECT pg_sleep(30); --",
  "$1 $$ $body$ \\' \\\\ %s %n {} \\N",       "a\nb\tc\rd",
  "t\xC3\xA4sk \xF0\x9F\x9A\x80 ' OR '1'='1",
};

struct hostile_input_fixture : db_fixture {
  int count(const std::string& where) {
    return query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE " + where);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(hostile_input_tests, hostile_input_fixture)

CAF_TEST(injection strings in every name run like any other task) {
  pqxx::nontransaction{*conn}.exec0(
    "CREATE TABLE ledger (id uuid, name text, channel text, args text)");
  auto tasks = std::make_shared<registry>();
  std::mutex mtx;
  std::set<std::string> names_seen;
  for (auto& name : hostile)
    tasks->add({name,
                [&, name](current_task& task) -> caf::error {
                  {
                    std::lock_guard<std::mutex> guard{mtx};
                    names_seen.insert(task.data().name);
                  }
                  return guarded([&]() -> caf::error {
                    pqxx::connection c{url};
                    pqxx::work tx{c};
                    tx.exec_params0("INSERT INTO ledger VALUES ($1::uuid, $2, "
                                    "$3, $4)",
                                    to_string(task.id()), task.data().name,
                                    task.data().channel_name,
                                    task.data().channel_args);
                    return task.complete(tx);
                  });
                },
                {}});
  std::vector<uuid> ids;
  for (std::size_t i = 0; i < hostile.size(); ++i) {
    auto& s = hostile[i];
    auto spawned = spawn_builder{s}
                     .channel_name(s)
                     .channel_args(hostile[(i + 1) % hostile.size()])
                     .unique_key(s)
                     .raw_json("{\"s\": \"" + std::string{"'; --"} + "\"}")
                     .spawn(*conn);
    CAF_REQUIRE(spawned);
    ids.push_back(spawned->id);
  }
  actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  cfg.node = hostile[0];
  cfg.channels = {hostile[1], hostile[2], hostile[0], hostile[3], hostile[4]};
  auto r = actors::runner::start(cfg);
  CAF_REQUIRE(r);
  CAF_CHECK(wait_until_drained(std::chrono::seconds{60}));
  // Status, cancel and watch take them too.
  for (auto& id : ids) {
    auto st = status(*conn, id);
    CAF_REQUIRE(st);
    CAF_CHECK_EQUAL(to_string(st->state), "completed");
    auto cancelled = cancel(*conn, id);
    CAF_CHECK(!cancelled && code_of(cancelled.error()) == errc::task_finished);
  }
  (*r)->stop();
  // The ledger: each task once, with its names as spawned; the tables are
  // all there.
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT id) FROM ledger"),
                  static_cast<int>(hostile.size()));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM ledger"),
                  static_cast<int>(hostile.size()));
  for (auto& name : hostile) {
    pqxx::nontransaction tx{*conn};
    CAF_CHECK_EQUAL(tx.exec_params1("SELECT count(*) FROM ledger WHERE name = "
                                    "$1 AND channel = $1",
                                    name)[0]
                      .as<int>(),
                    1);
  }
  CAF_CHECK_EQUAL(names_seen.size(), hostile.size());
  CAF_CHECK_EQUAL(count("state = 'completed' AND node = '"
                        + std::string{"x''); DROP TABLE cafmq.tasks; --"}
                        + "'"),
                  static_cast<int>(hostile.size()));
}

CAF_TEST(concurrent spawns of one unique key make one task) {
  // Two threads spawn the same 200 keys at the same moments, each through
  // its own connection; then a runner drains the queue.
  constexpr int keys = 200;
  std::atomic<int> ready{0};
  std::atomic<int> created{0};
  std::atomic<int> errors{0};
  auto spawner = [&] {
    auto c = connect();
    ++ready;
    while (ready < 2)
      std::this_thread::yield();
    for (int i = 0; i < keys; ++i) {
      auto x = spawn_builder{"once"}
                 .unique_key("key-" + std::to_string(i))
                 .spawn(*c);
      if (!x)
        ++errors;
      else if (x->created)
        ++created;
    }
  };
  std::thread a{spawner};
  std::thread b{spawner};
  a.join();
  b.join();
  CAF_CHECK_EQUAL(errors.load(), 0);
  CAF_CHECK_EQUAL(created.load(), keys);
  CAF_CHECK_EQUAL(count("true"), keys);
  pqxx::nontransaction{*conn}.exec0("CREATE TABLE ledger (key text)");
  auto tasks = std::make_shared<registry>();
  tasks->add({"once",
              [&](current_task& task) -> caf::error {
                return guarded([&]() -> caf::error {
                  pqxx::connection c{url};
                  pqxx::work tx{c};
                  tx.exec_params0("INSERT INTO ledger SELECT unique_key FROM "
                                  "cafmq.tasks WHERE id = $1::uuid",
                                  to_string(task.id()));
                  return task.complete(tx);
                });
              },
              {}});
  actors::runner_config cfg;
  cfg.database_url = url;
  cfg.tasks = tasks;
  auto r = actors::runner::start(cfg);
  CAF_REQUIRE(r);
  CAF_CHECK(wait_until_drained(std::chrono::seconds{60}));
  (*r)->stop();
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM ledger"), keys);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT key) FROM ledger"),
                  keys);
}

CAF_TEST_FIXTURE_SCOPE_END()
