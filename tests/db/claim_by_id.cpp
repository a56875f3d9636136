// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE claim_by_id
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <set>
#include <thread>

#include <pqxx/pqxx>

#include "cafmq/admin.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

// The payloads of cafmq_ready that a connection heard.
struct ready_payloads : pqxx::notification_receiver {
  explicit ready_payloads(pqxx::connection_base& c)
    : pqxx::notification_receiver(c, "cafmq_ready") {
    // nop
  }

  void operator()(const std::string& payload, int) override {
    got.insert(payload);
  }

  std::set<std::string> got;
};

// What `c` hears of the next commit that notifies: a commit's
// notifications arrive together.
std::set<std::string> heard(pqxx::connection_base& c, ready_payloads& r) {
  r.got.clear();
  for (int i = 0; i < 30 && r.got.empty(); ++i)
    c.await_notification(1, 0);
  c.get_notifs();
  return r.got;
}

claim_request by_id(std::vector<std::string> names, std::vector<uuid> ids) {
  auto req = request(std::move(names));
  req.ids = std::move(ids);
  return req;
}

// Whether a claim by id asks for the fair claim to follow.
bool asks_fair_claim(const claim_result& x) {
  return x.wait && x.wait->count() == 0;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(claim_by_id_tests, db_fixture)

CAF_TEST(a spawn names its few ready tasks in the notification) {
  auto listener = connect();
  ready_payloads ready{*listener};
  const std::string sep{"\x1f"};
  auto plain = spawn_builder{"t"}.channel_name("mail").spawn(*conn)->id;
  CAF_CHECK(heard(*listener, ready)
            == std::set<std::string>{"mail" + sep + to_string(plain)});
  // Two in one call: one notification with both, in spawn order.
  auto pair = spawn_many(*conn, {spawn_builder{"t"}.channel_name("mail"),
                                 spawn_builder{"t"}.channel_name("mail")});
  CAF_REQUIRE(pair);
  CAF_CHECK(heard(*listener, ready)
            == std::set<std::string>{"mail" + sep + to_string(pair->at(0).id)
                                     + "," + to_string(pair->at(1).id)});
  // What a claim by id must not take is not named: the channel alone.
  spawn_builder{"t"}.channel_name("mail").ordered().spawn(*conn);
  CAF_CHECK(heard(*listener, ready) == std::set<std::string>{"mail"});
  spawn_builder{"t"}.channel_name("mail").delay(1h).spawn(*conn);
  CAF_CHECK(heard(*listener, ready) == std::set<std::string>{"mail"});
  spawn_builder{"t"}.channel_name("mail").priority(3).spawn(*conn);
  CAF_CHECK(heard(*listener, ready) == std::set<std::string>{"mail"});
  // 33 at once are more than a claim by id is for.
  std::vector<spawn_builder> many(33, spawn_builder{"t"}.channel_name("sms"));
  CAF_REQUIRE(spawn_many(*conn, many));
  CAF_CHECK(heard(*listener, ready) == std::set<std::string>{"sms"});
  // A unique key already held spawns nothing and names nothing.
  auto held = spawn_builder{"t"}.channel_name("k").unique_key("u").spawn(*conn);
  CAF_REQUIRE(held);
  heard(*listener, ready);
  auto again
    = spawn_builder{"t"}.channel_name("k").unique_key("u").spawn(*conn);
  CAF_REQUIRE(again && !again->created);
  auto after = spawn_builder{"t"}.channel_name("z").spawn(*conn)->id;
  CAF_CHECK(heard(*listener, ready)
            == std::set<std::string>{"z" + sep + to_string(after)});
}

CAF_TEST(a claim by id takes a ready task and leaves the fair cursor) {
  auto a = spawn_builder{"t"}.channel_name("a").spawn(*conn)->id;
  auto b = spawn_builder{"t"}.channel_name("b").spawn(*conn)->id;
  auto q = poller();
  // The fair claim stops at the first of a and b in the walk's order
  // (limit 1): its cursor.
  auto fair = claim_or_throw(*q, request({"t"}, 1));
  CAF_REQUIRE_EQUAL(fair.tasks.size(), 1u);
  CAF_REQUIRE(fair.tasks[0].id == a || fair.tasks[0].id == b);
  auto other = fair.tasks[0].id == a ? b : a;
  auto cursor = q->cursor();
  auto c = spawn_builder{"t"}.channel_name("c").spawn(*conn)->id;
  auto x = claim_or_throw(*q, by_id({"t"}, {c}));
  CAF_REQUIRE_EQUAL(x.tasks.size(), 1u);
  CAF_CHECK(x.tasks[0].id == c);
  CAF_CHECK_EQUAL(x.tasks[0].attempt, 1);
  CAF_CHECK(!asks_fair_claim(x));
  CAF_CHECK_EQUAL(state_of(*conn, c), "running");
  CAF_CHECK(q->cursor().channel_name == cursor.channel_name);
  // Taken already: nothing to take, and nothing for the fair claim to do.
  auto again = claim_or_throw(*q, by_id({"t"}, {c}));
  CAF_CHECK(again.tasks.empty());
  CAF_CHECK(!asks_fair_claim(again));
  // The next fair claim goes on with the other one.
  auto next = claim_or_throw(*q, request({"t"}, 1));
  CAF_REQUIRE_EQUAL(next.tasks.size(), 1u);
  CAF_CHECK(next.tasks[0].id == other);
}

CAF_TEST(a claim by id leaves what the fair claim would hold back) {
  auto q = poller();
  // Each task is named alone; none is taken, and the fair claim must follow.
  auto refused = [&](const uuid& id, claim_request req) {
    req.ids = {id};
    auto x = claim_or_throw(*q, req);
    if (!x.tasks.empty() || !asks_fair_claim(x))
      CAF_FAIL("claimed by id: " << to_string(id));
    CAF_CHECK_EQUAL(state_of(*conn, id), "pending");
  };
  refused(spawn_builder{"t"}.ordered().spawn(*conn)->id, request({"t"}));
  refused(spawn_builder{"t"}.delay(1h).spawn(*conn)->id, request({"t"}));
  // A name this runner does not run: not taken, and no fair claim (it
  // would take nothing either).
  auto foreign = spawn_builder{"u"}.spawn(*conn)->id;
  auto not_mine = claim_or_throw(*q, by_id({"t"}, {foreign}));
  CAF_CHECK(not_mine.tasks.empty());
  CAF_CHECK(!asks_fair_claim(not_mine));
  CAF_CHECK_EQUAL(state_of(*conn, foreign), "pending");
  auto served = request({"t"});
  served.channels = {"mine"};
  refused(spawn_builder{"t"}.channel_name("other").spawn(*conn)->id, served);
  auto local = request({"t"});
  local.paused = {"held"};
  refused(spawn_builder{"t"}.channel_name("held").spawn(*conn)->id, local);
  CAF_REQUIRE(pause(*conn, pause_kind::channel, "stopped"));
  refused(spawn_builder{"t"}.channel_name("stopped").spawn(*conn)->id,
          request({"t"}));
  CAF_REQUIRE(pause(*conn, pause_kind::task, "v"));
  refused(spawn_builder{"v"}.spawn(*conn)->id, request({"t", "v"}));
  channel_limit limit;
  limit.channel_name = "narrow";
  limit.max_running = 5;
  CAF_REQUIRE(!set_channel_limit(*conn, limit));
  refused(spawn_builder{"t"}.channel_name("narrow").spawn(*conn)->id,
          request({"t"}));
  // A prioritized task waits: the fair claim serves it first.
  auto high = spawn_builder{"t"}.priority(5).spawn(*conn)->id;
  auto plain = spawn_builder{"t"}.spawn(*conn)->id;
  refused(plain, request({"t"}));
  auto fair = claim_or_throw(*q, request({"t"}));
  std::set<uuid> fair_ids;
  for (auto& t : fair.tasks)
    fair_ids.insert(t.id);
  CAF_CHECK(fair_ids.count(high) == 1 && fair_ids.count(plain) == 1);
  // A task another claim has locked is left to it; the fair claim follows
  // in case that claim gives it up.
  auto locked = spawn_builder{"t"}.channel_name("l").spawn(*conn)->id;
  auto other = connect();
  pqxx::work tx{*other};
  tx.exec_params("SELECT 1 FROM cafmq.tasks_live WHERE id = $1 FOR UPDATE",
                 to_string(locked));
  refused(locked, request({"t"}));
  tx.abort();
  auto x = claim_or_throw(*q, by_id({"t"}, {locked}));
  CAF_CHECK_EQUAL(x.tasks.size(), 1u);
  CAF_CHECK(!asks_fair_claim(x));
}

CAF_TEST(a claim by id ends a task that must not run as the fair claim does) {
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  CAF_REQUIRE(cancel(*conn, id));
  // A pending task that is cancelled ends at once; one past its deadline
  // ends at its claim.
  auto late
    = spawn_builder{"t"}.deadline(std::chrono::system_clock::now() + 1h);
  auto late_id = late.spawn(*conn)->id;
  pqxx::nontransaction{*conn}.exec_params(
    "UPDATE cafmq.tasks_live SET deadline = now() - interval '1 second'"
    " WHERE id = $1",
    to_string(late_id));
  auto q = poller();
  auto x = claim_or_throw(*q, by_id({"t"}, {id, late_id}));
  CAF_CHECK(x.tasks.empty());
  CAF_REQUIRE_EQUAL(x.ended.size(), 1u);
  CAF_CHECK(x.ended[0].task.id == late_id);
  CAF_CHECK_EQUAL(x.ended[0].state, "failed");
  CAF_CHECK_EQUAL(state_of(*conn, late_id), "failed");
  CAF_CHECK(!asks_fair_claim(x));
}

CAF_TEST(a claim by id reads its tasks through the primary key) {
  // Under a held snapshot, a generic plan made from statistics that saw
  // few live tasks walked tasks_unordered_queue (ordered as the claim
  // orders) instead of looking the ids up, so every dead entry of it, in
  // each claim by id (claim_ids.sql). Sorts priced out here make any plan
  // that may use a partial index of the ready tasks take it.
  std::vector<uuid> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(spawn_builder{"t"}.spawn(*conn)->id);
  auto ready_index_scans = [&] {
    // This session's counters reach the statistics at its next
    // transaction's end.
    query_value<std::string>("SELECT pg_stat_force_next_flush()::text");
    return query_value<long>(
      "SELECT sum(idx_scan) FROM pg_stat_user_indexes WHERE schemaname = "
      "'cafmq' AND indexrelname IN ('tasks_unordered_queue', "
      "'tasks_unordered_ready', 'tasks_running')");
  };
  auto before = ready_index_scans();
  query_value<std::string>("SELECT set_config('enable_sort', 'off', false)");
  std::string list;
  for (auto& id : ids)
    list += (list.empty() ? "'" : ",'") + to_string(id) + "'";
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.claim_ids('n', '{t}', NULL, "
                     "NULL, ARRAY["
                     + list
                     + "]::uuid[], '30 s', 5) c "
                       "WHERE c.id IS NOT NULL"),
    3);
  query_value<std::string>("SELECT set_config('enable_sort', 'on', false)");
  CAF_CHECK_EQUAL(ready_index_scans(), before);
}

CAF_TEST(two pollers claiming the same ids by id take each task once) {
  constexpr int n = 400;
  std::vector<uuid> ids;
  for (int i = 0; i < n; ++i)
    ids.push_back(spawn_builder{"t"}
                    .channel_name("c" + std::to_string(i % 7))
                    .spawn(*conn)
                    ->id);
  std::vector<std::vector<uuid>> taken(2);
  std::atomic<int> errors{0};
  auto run = [&](int k) {
    auto q = poller();
    // Both walk the ids in groups of 4, as two runners hearing the same
    // notifications would.
    for (size_t i = 0; i < ids.size(); i += 4) {
      std::vector<uuid> group(ids.begin() + i,
                              ids.begin() + std::min(ids.size(), i + 4));
      auto x = q->claim(by_id({"t"}, group));
      if (!x) {
        if (errors++ == 0)
          CAF_MESSAGE("claim by id failed: " << to_string(x.error()));
        continue;
      }
      for (auto& t : x->tasks)
        taken[k].push_back(t.id);
    }
  };
  std::thread t1{run, 0};
  std::thread t2{run, 1};
  t1.join();
  t2.join();
  CAF_CHECK_EQUAL(errors.load(), 0);
  std::set<uuid> all;
  for (auto& xs : taken)
    for (auto& id : xs)
      CAF_CHECK(all.insert(id).second);
  // What neither took (each skipped what the other held) is left pending
  // for the fair claim; nothing was taken twice, and nothing is lost.
  auto q = poller();
  for (;;) {
    auto x = claim_or_throw(*q, request({"t"}, 100));
    if (x.tasks.empty())
      break;
    for (auto& t : x.tasks)
      CAF_CHECK(all.insert(t.id).second);
  }
  CAF_CHECK_EQUAL(all.size(), static_cast<size_t>(n));
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks_live"
                                   " WHERE state = 'running' AND attempt = 1"),
                  n);
}

CAF_TEST(a task spawned while a claim runs is not due later but now) {
  // The claim's transaction began before the spawn: the task's run_at is
  // after the claim's now(), yet it is due, and its notification wakes the
  // runner. The claim's wait must not count it as scheduled.
  auto claimer = connect();
  pqxx::work tx{*claimer};
  tx.exec("SELECT now()");
  auto id = spawn_builder{"t"}.spawn(*conn)->id;
  CAF_CHECK(tx.exec1("SELECT cafmq.claim_next_due() IS NULL")[0].as<bool>());
  // A run_at set after the spawn (a delay, a retry) that passed meanwhile
  // is due: no notification came for it.
  pqxx::nontransaction{*conn}.exec_params(
    "UPDATE cafmq.tasks_live SET run_at = clock_timestamp() WHERE id = $1",
    to_string(id));
  CAF_CHECK(tx.exec1("SELECT cafmq.claim_next_due() <= clock_timestamp()")[0]
              .as<bool>());
  // A task scheduled later is due at its time.
  auto later = spawn_builder{"t"}.delay(1h).spawn(*conn)->id;
  pqxx::nontransaction{*conn}.exec_params(
    "DELETE FROM cafmq.tasks_live WHERE id = $1", to_string(id));
  CAF_CHECK(tx.exec1("SELECT cafmq.claim_next_due() = (SELECT run_at FROM "
                     "cafmq.tasks_live WHERE id = '"
                     + to_string(later) + "')")[0]
              .as<bool>());
}

CAF_TEST_FIXTURE_SCOPE_END()
