// SPDX-License-Identifier: BSD-3-Clause
// Priorities, results, channel limits and periodic schedules, against the
// database (the runtime's part is in tests/e2e/scheduling.cpp).
#define CAF_SUITE scheduling
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "cafmq/admin.hpp"
#include "cafmq/client.hpp"
#include "cafmq/current_task.hpp"
#include "cafmq/schedule.hpp"
#include "support/db_fixture.hpp"
#include "support/queue_helpers.hpp"

using namespace cafmq;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

std::map<std::string, int> channels_of(const claim_result& x) {
  std::map<std::string, int> result;
  for (const auto& t : x.tasks)
    ++result[t.channel_name];
  return result;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(scheduling_tests, db_fixture)

// -- priorities ---------------------------------------------------------------

CAF_TEST(ten high priority tasks start in the next claim after ten thousand) {
  std::vector<spawn_builder> low;
  for (int i = 0; i < 10000; ++i)
    low.push_back(spawn_builder{"t"}.channel_name("c").json(i));
  spawn_or_throw(*conn, low);
  std::set<uuid> high;
  std::vector<spawn_builder> xs;
  for (int i = 0; i < 10; ++i)
    xs.push_back(spawn_builder{"t"}.channel_name("c").priority(5).json(i));
  for (auto& x : spawn_or_throw(*conn, xs))
    high.insert(x.id);
  auto q = poller();
  auto a = claim_or_throw(*q, request({"t"}, 10));
  CAF_REQUIRE_EQUAL(a.tasks.size(), 10u);
  for (const auto& t : a.tasks)
    CAF_CHECK(high.count(t.id) == 1);
  // Then the low ones, oldest first.
  auto b = claim_or_throw(*q, request({"t"}, 1));
  CAF_REQUIRE_EQUAL(b.tasks.size(), 1u);
  auto first_low = b.tasks[0].payload_json.value_or("");
  CAF_CHECK_EQUAL(first_low, "0");
}

CAF_TEST(higher priority runs first within a channel and channels take turns) {
  spawn_builder{"t"}.channel_name("a").priority(1).json(1).spawn(*conn);
  spawn_builder{"t"}.channel_name("a").priority(9).json(9).spawn(*conn);
  spawn_builder{"t"}.channel_name("a").priority(5).json(5).spawn(*conn);
  for (int i = 0; i < 50; ++i)
    spawn_builder{"t"}.channel_name("a").priority(3).json(3).spawn(*conn);
  spawn_builder{"t"}.channel_name("b").json(0).spawn(*conn);
  auto q = poller();
  // Round-robin first: one of each channel, a's highest.
  auto x = claim_or_throw(*q, request({"t"}, 2));
  auto by_channel = channels_of(x);
  CAF_CHECK_EQUAL(by_channel["a"], 1);
  CAF_CHECK_EQUAL(by_channel["b"], 1);
  for (const auto& t : x.tasks)
    if (t.channel_name == "a")
      CAF_CHECK_EQUAL(t.payload_json.value_or(""), "9");
  auto y = claim_or_throw(*q, request({"t"}, 1));
  CAF_REQUIRE_EQUAL(y.tasks.size(), 1u);
  CAF_CHECK_EQUAL(y.tasks[0].payload_json.value_or(""), "5");
  auto z = claim_or_throw(*q, request({"t"}, 3));
  CAF_REQUIRE_EQUAL(z.tasks.size(), 3u);
  for (const auto& t : z.tasks)
    CAF_CHECK_EQUAL(t.payload_json.value_or(""), "3");
}

CAF_TEST(a scheduled high priority task does not hide ready ones) {
  spawn_builder{"t"}.channel_name("a").priority(9).delay(1h).spawn(*conn);
  auto ready = spawn_builder{"t"}.channel_name("a").json(0).spawn(*conn)->id;
  auto q = poller();
  auto x = claim_or_throw(*q, request({"t"}, 5));
  CAF_REQUIRE_EQUAL(x.tasks.size(), 1u);
  CAF_CHECK(x.tasks[0].id == ready);
}

CAF_TEST(priority is refused for ordered tasks and out of range) {
  auto ordered = spawn_builder{"t"}.ordered().priority(1).spawn(*conn);
  CAF_REQUIRE(!ordered);
  CAF_CHECK(code_of(ordered.error()) == errc::invalid_argument);
  auto negative = spawn_builder{"t"}.priority(-1).spawn(*conn);
  CAF_REQUIRE(!negative);
  CAF_CHECK(code_of(negative.error()) == errc::invalid_argument);
  auto big = spawn_builder{"t"}.priority(max_priority + 1).spawn(*conn);
  CAF_CHECK(!big);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.tasks"), 0);
  auto id = spawn_builder{"t"}.priority(max_priority).spawn(*conn)->id;
  auto st = status(*conn, id);
  CAF_REQUIRE(st);
  CAF_CHECK_EQUAL(st->priority, max_priority);
}

// -- results ------------------------------------------------------------------

CAF_TEST(a result stored with the completion is returned by status) {
  auto id = spawn_builder{"t"}.json(1).spawn(*conn)->id;
  auto q = poller();
  auto a = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(a.tasks.size(), 1u);
  current_task task{a.tasks[0], q};
  CAF_CHECK(task.set_result(std::map<std::string, int>{{"sum", 42}})
            == caf::none);
  // In the caller's transaction: nothing is visible before it commits.
  auto other = std::make_shared<pqxx::connection>(url);
  pqxx::work tx{*other};
  CAF_REQUIRE(task.complete(tx) == caf::none);
  auto st = status(*conn, id);
  CAF_REQUIRE(st);
  CAF_CHECK(st->state == task_state::completed);
  CAF_REQUIRE(st->result.has_value());
  auto result = *st->result;
  CAF_CHECK_EQUAL(result, R"({"sum": 42})");
}

CAF_TEST(results go through a batch and tasks without one keep none) {
  auto q = poller();
  auto with = spawn_builder{"t"}.spawn(*conn)->id;
  auto without = spawn_builder{"t"}.spawn(*conn)->id;
  auto a = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(a.tasks.size(), 2u);
  std::vector<attempt_ref> refs;
  std::vector<std::string> results;
  for (const auto& t : a.tasks) {
    refs.push_back({t.id, t.attempt});
    results.push_back(t.id == with ? R"(["a", 1, null])" : "");
  }
  auto done = q->complete(refs, results);
  CAF_REQUIRE(done);
  CAF_CHECK_EQUAL(done->size(), 2u);
  auto x = status(*conn, with);
  auto y = status(*conn, without);
  CAF_REQUIRE(x && y);
  CAF_CHECK_EQUAL(x->result.value_or(""), R"(["a", 1, null])");
  CAF_CHECK(!y->result);
}

CAF_TEST(bad results are refused before anything is written) {
  spawn_builder{"t"}.spawn(*conn);
  auto q = poller();
  auto a = claim_or_throw(*q, request({"t"}));
  CAF_REQUIRE_EQUAL(a.tasks.size(), 1u);
  current_task task{a.tasks[0], q};
  auto bad = task.set_raw_result("{not json");
  CAF_CHECK(code_of(bad) == errc::invalid_json);
  auto nul = task.set_result(std::string{"a\0b", 3});
  CAF_CHECK(code_of(nul) == errc::invalid_json);
  CAF_CHECK(task.result().empty());
  CAF_CHECK(task.complete() == caf::none);
}

// -- channel limits
// -------------------------------------------------------------

CAF_TEST(at most max_running run across pollers and a freed slot is reused) {
  for (int i = 0; i < 10; ++i)
    spawn_builder{"t"}
      .channel_name("lim")
      .channel_args(std::to_string(i % 3))
      .spawn(*conn);
  for (int i = 0; i < 5; ++i)
    spawn_builder{"t"}.channel_name("free").spawn(*conn);
  channel_limit lim;
  lim.channel_name = "lim";
  lim.max_running = 2;
  CAF_REQUIRE(set_channel_limit(*conn, lim) == caf::none);
  auto q1 = poller();
  auto q2 = poller();
  auto a = claim_or_throw(*q1, request({"t"}, 10));
  auto b = claim_or_throw(*q2, request({"t"}, 10));
  auto ca = channels_of(a);
  auto cb = channels_of(b);
  CAF_CHECK_EQUAL(ca["lim"] + cb["lim"], 2);
  CAF_CHECK_EQUAL(ca["free"] + cb["free"], 5);
  // A poller waiting on a full channel looks again soon.
  auto c = claim_or_throw(*q2, request({"t"}, 10));
  CAF_CHECK(c.tasks.empty());
  CAF_REQUIRE(c.wait.has_value());
  CAF_CHECK(*c.wait <= std::chrono::microseconds{200000});
  // One ends: one slot.
  for (const auto& t : a.tasks.empty() ? b.tasks : a.tasks)
    if (t.channel_name == "lim") {
      CAF_REQUIRE(q1->complete(std::vector<attempt_ref>{{t.id, t.attempt}}));
      break;
    }
  auto d = claim_or_throw(*q1, request({"t"}, 10));
  CAF_CHECK_EQUAL(d.tasks.size(), 1u);
  auto xs = channel_limits(*conn);
  CAF_REQUIRE(xs && xs->size() == 1u);
  CAF_CHECK_EQUAL(xs->at(0).running, 2);
  // Cleared, the rest run.
  CAF_CHECK_EQUAL(clear_channel_limit(*conn, "lim"), true);
  CAF_CHECK_EQUAL(clear_channel_limit(*conn, "lim"), false);
  auto e = claim_or_throw(*q2, request({"t"}, 10));
  CAF_CHECK_EQUAL(e.tasks.size(), 7u);
}

CAF_TEST(
  a task a claim of a limited channel ends comes back and takes no slot) {
  auto late = spawn_builder{"t"}
                .channel_name("lim")
                .deadline(std::chrono::system_clock::now() + 1h)
                .spawn(*conn)
                ->id;
  auto ok = spawn_builder{"t"}.channel_name("lim").spawn(*conn)->id;
  // Its deadline passes before it ran.
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.tasks_live SET deadline = now() - interval '1 s' WHERE id = '"
    + to_string(late) + "'");
  channel_limit lim;
  lim.channel_name = "lim";
  lim.max_running = 1;
  CAF_REQUIRE(set_channel_limit(*conn, lim) == caf::none);
  auto q = poller();
  std::vector<claimed_task> claimed;
  std::vector<claim_ending> ended;
  for (int i = 0; i < 3 && claimed.empty(); ++i) {
    auto batch = claim_or_throw(*q, request({"t"}, 10));
    claimed.insert(claimed.end(), batch.tasks.begin(), batch.tasks.end());
    ended.insert(ended.end(), batch.ended.begin(), batch.ended.end());
  }
  CAF_REQUIRE_EQUAL(ended.size(), 1u);
  CAF_CHECK(ended[0].task.id == late);
  CAF_CHECK_EQUAL(ended[0].task.channel_name, "lim");
  CAF_CHECK_EQUAL(ended[0].state, "failed");
  CAF_CHECK_EQUAL(ended[0].error, "deadline passed before the task ran");
  // The slot went to the task that runs.
  CAF_REQUIRE_EQUAL(claimed.size(), 1u);
  CAF_CHECK(claimed[0].id == ok);
  CAF_CHECK_EQUAL(state_of(*conn, late), "failed");
}

CAF_TEST(the args of a limited channel share its slots in turn) {
  for (int i = 0; i < 4; ++i)
    for (const char* args : {"x", "y"})
      spawn_builder{"t"}.channel_name("lim").channel_args(args).spawn(*conn);
  channel_limit lim;
  lim.channel_name = "lim";
  lim.max_running = 1;
  CAF_REQUIRE(set_channel_limit(*conn, lim) == caf::none);
  auto q = poller();
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    auto a = claim_or_throw(*q, request({"t"}, 10));
    CAF_REQUIRE_EQUAL(a.tasks.size(), 1u);
    order.push_back(a.tasks[0].channel_args);
    CAF_REQUIRE(q->complete(
      std::vector<attempt_ref>{{a.tasks[0].id, a.tasks[0].attempt}}));
  }
  // In the walk's order of the two, whichever comes first.
  auto first = order[0];
  auto second = first == "x" ? "y" : "x";
  CAF_CHECK(order == (std::vector<std::string>{first, second, first, second}));
}

CAF_TEST(at most rate_limit starts per period and the wait says when) {
  for (int i = 0; i < 10; ++i)
    spawn_builder{"t"}.channel_name("rate").spawn(*conn);
  channel_limit lim;
  lim.channel_name = "rate";
  lim.rate_limit = 3;
  lim.rate_period = std::chrono::seconds{30};
  CAF_REQUIRE(set_channel_limit(*conn, lim) == caf::none);
  auto q1 = poller();
  auto q2 = poller();
  auto a = claim_or_throw(*q1, request({"t"}, 2));
  auto b = claim_or_throw(*q2, request({"t"}, 10));
  CAF_CHECK_EQUAL(a.tasks.size() + b.tasks.size(), 3u);
  auto c = claim_or_throw(*q1, request({"t"}, 10));
  CAF_CHECK(c.tasks.empty());
  CAF_REQUIRE(c.wait.has_value());
  CAF_CHECK(*c.wait > std::chrono::seconds{25});
  CAF_CHECK(*c.wait <= std::chrono::seconds{30});
  // The window slides: starts older than the period leave it.
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.channel_limits SET recent_starts = "
    "ARRAY(SELECT s - interval '31 seconds' FROM unnest(recent_starts) s)");
  auto d = claim_or_throw(*q2, request({"t"}, 10));
  CAF_CHECK_EQUAL(d.tasks.size(), 3u);
}

CAF_TEST(bad limits are refused) {
  channel_limit none;
  none.channel_name = "x";
  CAF_CHECK(code_of(set_channel_limit(*conn, none)) == errc::invalid_argument);
  channel_limit zero = none;
  zero.max_running = 0;
  CAF_CHECK(code_of(set_channel_limit(*conn, zero)) == errc::invalid_argument);
  channel_limit half = none;
  half.rate_limit = 3;
  CAF_CHECK(code_of(set_channel_limit(*conn, half)) == errc::invalid_argument);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.channel_limits"),
                  0);
}

// -- schedules
// ------------------------------------------------------------------

CAF_TEST(bad schedules are refused with the reason) {
  auto add = [&](periodic when, std::string name = "s") {
    return add_schedule(*conn, schedule_spec{name, spawn_builder{"t"}, when});
  };
  auto check = [&](const caf::error& err, const std::string& part) {
    CAF_CHECK(code_of(err) == errc::invalid_argument);
    auto text = render(err);
    auto found = text.find(part) != std::string::npos;
    if (!found)
      CAF_MESSAGE("expected '" << part << "' in: " << text);
    CAF_CHECK(found);
  };
  check(add(periodic::at("61 * * * *")), "minute");
  check(add(periodic::at("* * * *")), "field");
  check(add(periodic::at("0 0 30 2 *")), "matches no time");
  check(add(periodic::at("@hourly", "Mars/Olympus")), "time zone");
  check(add(periodic::interval(0s)), "at least 1s");
  periodic both = periodic::at("* * * * *");
  both.every = 5s;
  check(add(both), "either");
  periodic zoned = periodic::interval(5s);
  zoned.time_zone = "Europe/Berlin";
  check(add(zoned), "time zone");
  auto err = add(periodic::at("@hourly"), "");
  CAF_CHECK(code_of(err) == errc::invalid_name);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(*) FROM cafmq.schedules"), 0);
}

CAF_TEST(a cron schedule ticks at its next local time in its zone) {
  periodic when = periodic::at("30 4 * * *", "Asia/Kolkata");
  CAF_REQUIRE(add_schedule(*conn, {"daily", spawn_builder{"t"}, when})
              == caf::none);
  // 04:30 in Kolkata (UTC+5:30) is 23:00 UTC.
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT to_char(next_run_at AT TIME ZONE 'UTC', "
                             "'HH24:MI') FROM cafmq.schedules"),
    "23:00");
  CAF_CHECK_EQUAL(
    query_value<bool>("SELECT next_run_at > now() AND next_run_at <= now() + "
                      "interval '1 day' FROM cafmq.schedules"),
    true);
  auto xs = list_schedules(*conn);
  CAF_REQUIRE(xs && xs->size() == 1u);
  CAF_CHECK_EQUAL(xs->at(0).task_name, "t");
  CAF_CHECK_EQUAL(xs->at(0).cron, "30 4 * * *");
  // Nothing is due: firing spawns nothing.
  auto fired = fire_due_schedules(*conn);
  CAF_REQUIRE(fired);
  CAF_CHECK_EQUAL(fired->spawned, 0);
}

namespace {

// Moves every schedule `secs` seconds back (as if no runner ran for that
// long), keeping it on its grid.
void rewind(pqxx::connection_base& conn, int secs) {
  pqxx::nontransaction{conn}.exec0(
    "UPDATE cafmq.schedules SET next_run_at = "
    "to_timestamp(floor(extract(epoch FROM now()))) - interval '"
    + std::to_string(secs) + " seconds'");
}

int tasks_of(db_fixture& f, const std::string& schedule) {
  return f.query_value<int>(
    "SELECT count(*) FROM cafmq.tasks WHERE unique_key LIKE 'cafmq.schedule:"
    + schedule + "@%'");
}

} // namespace

CAF_TEST(due ticks are spawned once each with the schedule task and options) {
  auto task = spawn_builder{"report"}
                .channel_name("reports")
                .priority(3)
                .retries(1)
                .raw_json(R"({"kind": "daily"})");
  // A day apart: however slow a loaded machine is between the firings
  // below, no new tick falls due (unless they straddle midnight, UTC).
  periodic daily = periodic::interval(std::chrono::hours{24});
  daily.grace = std::chrono::hours{24 * 10};
  CAF_REQUIRE(add_schedule(*conn, {"s", task, daily}) == caf::none);
  pqxx::nontransaction{*conn}.exec0(
    "UPDATE cafmq.schedules SET next_run_at = date_trunc('day', now(), 'UTC') "
    "- interval '5 days'");
  auto fired = fire_due_schedules(*conn);
  CAF_REQUIRE(fired);
  // Five days back up to today: 6 ticks, all within the grace.
  CAF_CHECK(fired->spawned >= 6 && fired->spawned <= 7);
  CAF_CHECK_EQUAL(fired->missed, 0);
  CAF_CHECK_EQUAL(tasks_of(*this, "s"), fired->spawned);
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(DISTINCT unique_key) FROM cafmq.tasks"),
    fired->spawned);
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.tasks t "
                     "WHERE t.name = 'report' AND t.channel_name = "
                     "'reports' AND t.priority = 3 AND t.max_attempts = 2 AND "
                     "t.payload_json = '{\"kind\": \"daily\"}'"),
    fired->spawned);
  // The next tick is in the future; firing again spawns nothing.
  CAF_CHECK_EQUAL(
    query_value<bool>("SELECT next_run_at > now() FROM cafmq.schedules"), true);
  auto again = fire_due_schedules(*conn);
  CAF_REQUIRE(again);
  CAF_CHECK_EQUAL(again->spawned, 0);
  auto xs = list_schedules(*conn);
  CAF_REQUIRE(xs && xs->size() == 1u);
  CAF_CHECK_EQUAL(xs->at(0).ticks, fired->spawned);
}

CAF_TEST(missed ticks follow the catch up policy) {
  struct case_t {
    catch_up_policy policy;
    int limit;
  };
  for (auto [policy, limit] :
       {case_t{catch_up_policy::skip, 100}, case_t{catch_up_policy::once, 100},
        case_t{catch_up_policy::all, 100}, case_t{catch_up_policy::all, 10}}) {
    auto name = std::string{to_string(policy)} + std::to_string(limit);
    periodic when = periodic::interval(1s);
    when.catch_up = policy;
    when.catch_up_limit = limit;
    when.grace = 2s;
    CAF_REQUIRE(add_schedule(*conn, {name, spawn_builder{"t"}, when})
                == caf::none);
  }
  // 60 s of downtime: 57 or 58 ticks are older than the grace.
  rewind(*conn, 60);
  auto fired = fire_due_schedules(*conn);
  CAF_REQUIRE(fired);
  CAF_CHECK_EQUAL(fired->schedules, 4);
  auto missed = [&](const std::string& name) {
    return query_value<int>("SELECT missed FROM cafmq.schedules WHERE name = '"
                            + name + "'");
  };
  // The same now() for all four (one transaction): the same ticks.
  auto on_time = tasks_of(*this, "skip100");
  auto all_missed = missed("skip100");
  CAF_CHECK(on_time >= 2 && on_time <= 4);
  CAF_CHECK(all_missed >= 56 && all_missed <= 59);
  CAF_CHECK_EQUAL(tasks_of(*this, "once100"), on_time + 1);
  CAF_CHECK_EQUAL(missed("once100"), all_missed - 1);
  CAF_CHECK_EQUAL(tasks_of(*this, "all100"), on_time + all_missed);
  CAF_CHECK_EQUAL(missed("all100"), 0);
  CAF_CHECK_EQUAL(tasks_of(*this, "all10"), on_time + 10);
  CAF_CHECK_EQUAL(missed("all10"), all_missed - 10);
  // The oldest missed ticks ran: the first one 60 s back.
  CAF_CHECK_EQUAL(
    query_value<int>("SELECT count(*) FROM cafmq.tasks WHERE unique_key = "
                     "(SELECT min(unique_key) FROM cafmq.tasks WHERE "
                     "unique_key LIKE 'cafmq.schedule:all10@%')"),
    1);
  CAF_CHECK_EQUAL(
    query_value<std::string>(
      "SELECT min(substr(unique_key, length('cafmq.schedule:all10@') + 1)) "
      "FROM cafmq.tasks WHERE unique_key LIKE 'cafmq.schedule:all10@%'"),
    query_value<std::string>(
      "SELECT min(substr(unique_key, length('cafmq.schedule:all100@') + 1)) "
      "FROM cafmq.tasks WHERE unique_key LIKE 'cafmq.schedule:all100@%'"));
}

CAF_TEST(concurrent firing spawns each tick once) {
  CAF_REQUIRE(
    add_schedule(*conn, {"s", spawn_builder{"t"}, periodic::interval(1s)})
    == caf::none);
  rewind(*conn, 30);
  // Four firing connections race, again and again.
  std::atomic<int> spawned{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      pqxx::connection c{url};
      for (int j = 0; j < 20; ++j)
        if (auto x = fire_due_schedules(c))
          spawned += x->spawned;
    });
  for (auto& t : threads)
    t.join();
  auto n = tasks_of(*this, "s");
  CAF_CHECK(n >= 31);
  CAF_CHECK_EQUAL(spawned.load(), n);
  CAF_CHECK_EQUAL(query_value<int>("SELECT count(DISTINCT unique_key) FROM "
                                   "cafmq.tasks"),
                  n);
}

CAF_TEST(replacing a schedule keeps its next tick unless its timing changes) {
  CAF_REQUIRE(
    add_schedule(*conn, {"s", spawn_builder{"t"}, periodic::interval(3600s)})
    == caf::none);
  rewind(*conn, 10);
  auto before
    = query_value<std::string>("SELECT next_run_at::text FROM cafmq.schedules");
  CAF_REQUIRE(
    add_schedule(*conn, {"s", spawn_builder{"u"}, periodic::interval(3600s)})
    == caf::none);
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT next_run_at::text FROM cafmq.schedules"),
    before);
  CAF_CHECK_EQUAL(
    query_value<std::string>("SELECT spec->>'name' FROM cafmq.schedules"), "u");
  CAF_REQUIRE(
    add_schedule(*conn, {"s", spawn_builder{"u"}, periodic::interval(60s)})
    == caf::none);
  CAF_CHECK_EQUAL(
    query_value<bool>("SELECT next_run_at > now() FROM cafmq.schedules"), true);
  CAF_CHECK_EQUAL(remove_schedule(*conn, "s"), true);
  CAF_CHECK_EQUAL(remove_schedule(*conn, "s"), false);
}

CAF_TEST_FIXTURE_SCOPE_END()
