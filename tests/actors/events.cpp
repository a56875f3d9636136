// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE events
#include <caf/test/dsl.hpp>

#include "cafmq/actors/detail/event_hub.hpp"
#include "cafmq/detail/spawn_access.hpp"
#include "runtime/dispatcher_state.hpp"
#include "runtime/spawn_by_name.hpp"
#include "support/stand_ins.hpp"

using namespace caf;
using namespace cafmq;
using namespace cafmq::actors;
using namespace cafmq::test;
using namespace std::chrono_literals;

namespace {

struct event_book {
  std::vector<task_event> events;
  int batches = 0;

  std::vector<std::pair<task_event::kind_t, uuid>> seen() const {
    std::vector<std::pair<task_event::kind_t, uuid>> result;
    for (auto& x : events)
      result.emplace_back(x.kind, x.id);
    return result;
  }
};

event_actor::behavior_type collector(event_actor::pointer,
                                     std::shared_ptr<event_book> book) {
  return {
    [=](event_atom, const std::vector<task_event>& xs) {
      ++book->batches;
      book->events.insert(book->events.end(), xs.begin(), xs.end());
    },
  };
}

claimed_task in_channel(std::string name, std::string channel) {
  auto result = make_task(std::move(name));
  result.channel_name = std::move(channel);
  return result;
}

struct events_fixture : fixture {
  events_fixture() {
    task_options ward;
    ward.channel_name = "ward";
    ward.channel_args = "east";
    cfg.actor_tasks = {{"patient", cooperative_handler, ward, nullptr}};
    cfg.max_poll_wait = 1h;
  }

  event_actor subscribe(event_filter filter) {
    auto subscriber = sys.spawn(collector, book);
    self->send(rt, subscribe_atom::value, std::move(filter), subscriber);
    settle();
    return subscriber;
  }

  void claim_next(std::vector<claimed_task> tasks) {
    claim_result batch;
    batch.tasks = std::move(tasks);
    log->claims.push_back(batch);
    anon_send(dispatcher(), rescan_atom::value);
    settle();
  }

  using dispatcher_type = caf::stateful_actor<dispatcher_impl::dispatcher_state,
                                              dispatcher_actor::base>;

  // True while the dispatcher (and so every channel) sends events.
  bool active() {
    return static_cast<bool>(deref<dispatcher_type>(dispatcher()).state.events);
  }

  // Sends `x` to the only channel actor, as the pool or the router does
  // when its attempt left its handler.
  void report_to_channel(const task_outcome& x) {
    auto& channels = *deref<dispatcher_type>(dispatcher()).state.channels;
    CAF_REQUIRE_EQUAL(channels.size(), 1u);
    anon_send(channels.begin()->second.handle, done_atom::value,
              std::vector<task_outcome>{x});
    settle();
  }

  // The face's side of the runtime (its subscriptions, its hub).
  face_state& face() {
    return deref<face_type>(rt).state;
  }

  // Where emitters send events, as the channels do.
  event_sink_actor sink() {
    return event_sink_actor{state().events};
  }

  using seen_t = std::vector<std::pair<task_event::kind_t, uuid>>;

  std::shared_ptr<event_book> book = std::make_shared<event_book>();
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(events_tests, events_fixture)

CAF_TEST(a subscriber sees started and each written outcome of its channel) {
  start();
  subscribe({event_filter::channel_name, "a"});
  CAF_CHECK(active());
  auto ok = in_channel("ok", "a");
  auto boom = in_channel("boom", "a");
  auto elsewhere = in_channel("ok", "b");
  claim_next({ok, boom, elsewhere});
  CAF_CHECK_EQUAL(completed_count(), 2u);
  // Started as one batch per channel, then the outcomes once written.
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, ok.id},
                                        {task_event::started, boom.id},
                                        {task_event::completed, ok.id},
                                        {task_event::failed, boom.id}}));
  auto& failed = book->events.back();
  CAF_CHECK_EQUAL(failed.name, "boom");
  CAF_CHECK_EQUAL(failed.channel_name, "a");
  CAF_CHECK_EQUAL(failed.attempt, 1);
  CAF_CHECK_EQUAL(failed.node, "test");
  CAF_CHECK(failed.retryable); // attempt 1 of 5
  CAF_CHECK(failed.error.find("boom") != std::string::npos);
}

CAF_TEST(events before the first subscriber are not kept) {
  start();
  auto before = in_channel("ok", "a");
  claim_next({before});
  CAF_CHECK(!active());
  CAF_CHECK_EQUAL(completed_count(), 1u);
  subscribe({});
  auto after = in_channel("ok", "a");
  claim_next({after});
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, after.id},
                                        {task_event::completed, after.id}}));
}

CAF_TEST(a filter by task name passes only that task) {
  start();
  subscribe({event_filter::task_name, "boom"});
  auto ok = in_channel("ok", "a");
  auto boom = in_channel("boom", "a");
  claim_next({ok, boom});
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, boom.id},
                                        {task_event::failed, boom.id}}));
}

CAF_TEST(an attempt given back by a stop is reported released) {
  start();
  subscribe({});
  auto patient = in_channel("patient", "ward");
  claim_next({patient});
  request_stop();
  settle();
  // The handler actor honours the shutdown cancel when it comes.
  advance(cancel_point());
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, patient.id},
                                        {task_event::released, patient.id}}));
  CAF_CHECK(stop_answered());
}

CAF_TEST(an attempt completed in its handlers transaction is reported) {
  start();
  subscribe({});
  auto patient = in_channel("patient", "ward");
  claim_next({patient});
  // The handler completed the task with complete(tx), which committed: it
  // leaves its handler with nothing for the completer to write.
  report_to_channel(outcome(patient, task_outcome::recorded));
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, patient.id},
                                        {task_event::completed, patient.id}}));
}

CAF_TEST(an ending is reported as the database took it) {
  start();
  subscribe({});
  auto ok = in_channel("ok", "a");
  auto stale = in_channel("ok", "a");
  auto boom = in_channel("boom", "a");
  boom.max_attempts = 1;
  log->stale_writes = {stale.id};
  claim_next({ok, stale, boom});
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, ok.id},
                                        {task_event::started, stale.id},
                                        {task_event::started, boom.id},
                                        {task_event::completed, ok.id},
                                        {task_event::lost, stale.id},
                                        {task_event::failed, boom.id}}));
  // Its handler succeeded, but another runner had the task by then.
  CAF_CHECK(book->events[4].error.find("no longer current")
            != std::string::npos);
  // The fake database wrote the failure as retryable (a retry scheduled).
  CAF_CHECK(book->events[5].retryable);
}

CAF_TEST(a running attempt that stopped after a cancel is reported cancelled) {
  start();
  subscribe({});
  auto patient = in_channel("patient", "ward");
  claim_next({patient});
  log->cancel_requested.insert(patient.id);
  notify_cancel(patient);
  settle();
  // The handler actor fails on the cancel; the write ends the task cancelled.
  CAF_REQUIRE_EQUAL(book->events.size(), 2u);
  CAF_CHECK_EQUAL(book->events[1].kind, task_event::cancelled);
  CAF_CHECK(book->events[1].error.find("cancelled") != std::string::npos);
  CAF_CHECK(!book->events[1].retryable);
}

CAF_TEST(an ending names the worker that ran the attempt) {
  start();
  subscribe({});
  auto patient = in_channel("patient", "ward");
  claim_next({patient});
  // As a worker's port reports it through the router.
  auto done = outcome(patient, task_outcome::completed);
  done.worker = "w9";
  report_to_channel(done);
  CAF_REQUIRE_EQUAL(book->events.size(), 2u);
  CAF_CHECK_EQUAL(book->events[0].worker, "");
  CAF_CHECK_EQUAL(book->events[1].kind, task_event::completed);
  CAF_CHECK_EQUAL(book->events[1].worker, "w9");
}

CAF_TEST(tasks a claim ended instead of running are reported) {
  start();
  subscribe({});
  claim_ending poison{in_channel("ok", "a"), "failed", "lost 5 attempts"};
  claim_ending cancelled{in_channel("ok", "b"), "cancelled", "stop"};
  claim_result batch;
  batch.ended = {poison, cancelled};
  log->claims.push_back(batch);
  anon_send(dispatcher(), rescan_atom::value);
  settle();
  CAF_CHECK_EQUAL(book->seen(),
                  (seen_t{{task_event::failed, poison.task.id},
                          {task_event::cancelled, cancelled.task.id}}));
  CAF_CHECK_EQUAL(book->events[0].error, "lost 5 attempts");
  CAF_CHECK(!book->events[0].retryable);
  CAF_CHECK_EQUAL(book->events[1].channel_name, "b");
  // Counted as endings, like those a handler's outcome wrote.
  auto counts = stats();
  CAF_CHECK_EQUAL(counts.failed, 2);
  CAF_CHECK_EQUAL(counts.completed, 0);
}

CAF_TEST(a subscriber that ends is dropped) {
  start();
  auto subscriber = subscribe({});
  auto second = subscribe({});
  anon_send_exit(subscriber, exit_reason::user_shutdown);
  settle();
  CAF_CHECK(active());
  CAF_CHECK_EQUAL(face().subscriptions.size(), 1u);
  anon_send_exit(second, exit_reason::user_shutdown);
  settle();
  CAF_CHECK(!active());
  CAF_CHECK(face().subscriptions.empty());
}

CAF_TEST(a restarted hub serves the subscriptions on) {
  start();
  subscribe({});
  auto old = state().events;
  anon_send_exit(old, exit_reason::kill);
  settle();
  CAF_CHECK(state().events != old);
  CAF_CHECK(face().events == state().events);
  CAF_CHECK(logged("actor crashed, restarted"));
  auto ok = in_channel("ok", "a");
  claim_next({ok});
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, ok.id},
                                        {task_event::completed, ok.id}}));
}

CAF_TEST(a restart elsewhere leaves each subscription once) {
  start();
  subscribe({});
  anon_send_exit(state().keeper, exit_reason::kill);
  settle();
  CAF_CHECK(logged("actor crashed, restarted"));
  auto ok = in_channel("ok", "a");
  claim_next({ok});
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, ok.id},
                                        {task_event::completed, ok.id}}));
}

CAF_TEST(spawns through the runtime go to the write database) {
  start();
  spawn_request req;
  req.name = "patient";
  req.id = uuid::random();
  req.json = "[1]";
  self->send(rt, spawn_atom::value, req);
  settle();
  spawn_reply reply;
  self->receive([&](const spawn_reply& x) { reply = x; });
  CAF_CHECK_EQUAL(reply.id, *req.id);
  CAF_REQUIRE_EQUAL(log->spawns.size(), 1u);
  CAF_CHECK_EQUAL(*log->spawns[0].json, "[1]");
}

CAF_TEST(a spawn being written holds the events of its task until reported) {
  start();
  subscribe({});
  auto& ctx = *state().ctx;
  spawn_request req;
  req.name = "patient";
  auto resolved = resolve_spawn(ctx, req);
  CAF_REQUIRE(resolved);
  auto id = *resolved->builder.id();
  auto other = in_channel("ok", "b");
  // The write commits and, before its report reaches the hub, the task
  // starts on the claim path while another task goes on.
  using replies = std::vector<spawn_reply>;
  auto reply
    = write_spawns(ctx, sink(), {*resolved}, [&]() -> expected<replies> {
        auto early = in_channel("patient", "ward");
        early.id = id;
        emit(sink(), {make_event(task_event::started, early, ctx),
                      make_event(task_event::started, other, ctx)});
        return replies{{id, true}};
      });
  CAF_REQUIRE(reply);
  settle();
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, other.id},
                                        {task_event::spawned, id},
                                        {task_event::started, id}}));
  // The event names where the task goes: the definition's channel.
  auto& spawned = book->events[1];
  CAF_CHECK_EQUAL(spawned.name, "patient");
  CAF_CHECK_EQUAL(spawned.channel_name, "ward");
  CAF_CHECK_EQUAL(spawned.channel_args, "east");
}

CAF_TEST(a spawn that created nothing lets the held events go) {
  start();
  subscribe({});
  auto& ctx = *state().ctx;
  spawn_request req;
  req.name = "patient";
  req.unique_key = "once";
  auto resolved = resolve_spawn(ctx, req);
  CAF_REQUIRE(resolved);
  auto id = *resolved->builder.id();
  auto existing = in_channel("patient", "ward");
  // The unique key names a live task: nothing spawned, no `spawned` event.
  using replies = std::vector<spawn_reply>;
  auto reply
    = write_spawns(ctx, sink(), {*resolved}, [&]() -> expected<replies> {
        auto early = existing;
        early.id = id;
        emit(sink(), {make_event(task_event::started, early, ctx)});
        return replies{{existing.id, false}};
      });
  CAF_REQUIRE(reply);
  settle();
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, id}}));
  // A failed write lets them go as well.
  book->events.clear();
  auto failed = resolve_spawn(ctx, req);
  CAF_REQUIRE(failed);
  auto lost = *failed->builder.id();
  auto err = write_spawns(ctx, sink(), {*failed}, [&]() -> expected<replies> {
    auto early = existing;
    early.id = lost;
    emit(sink(), {make_event(task_event::started, early, ctx)});
    return make_error(errc::database_unavailable, "gone");
  });
  CAF_CHECK(!err);
  settle();
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, lost}}));
}

CAF_TEST(a spawn of many reports those it created with their workflow) {
  start();
  auto workflow = uuid::time_ordered();
  subscribe({event_filter::workflow, to_string(workflow)});
  auto& ctx = *state().ctx;
  std::vector<named_spawn> xs;
  for (auto key : {"first", "held", "third"}) {
    spawn_request req;
    req.name = "patient";
    req.unique_key = key;
    req.workflow = workflow;
    if (!xs.empty())
      req.parents = {*xs[0].builder.id()};
    auto x = resolve_spawn(ctx, req);
    CAF_REQUIRE(x);
    xs.push_back(std::move(*x));
  }
  auto id = [&](size_t i) {
    return *xs[i].builder.id();
  };
  auto holder = uuid::time_ordered();
  using replies = std::vector<spawn_reply>;
  // The second's key is held: spawned events for the first and the third,
  // each naming the workflow; the filter lets them through.
  auto reply = write_spawns(ctx, sink(), xs, [&]() -> expected<replies> {
    return replies{{id(0), true}, {holder, false}, {id(2), true}};
  });
  CAF_REQUIRE(reply);
  settle();
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::spawned, id(0)},
                                        {task_event::spawned, id(2)}}));
  for (auto& x : book->events)
    CAF_CHECK(x.workflow && *x.workflow == workflow);
  // A task of no workflow does not pass.
  emit(sink(), {make_event(task_event::started, in_channel("ok", "b"), ctx)});
  settle();
  CAF_CHECK_EQUAL(book->events.size(), 2u);
}

CAF_TEST(a spawn request with a policy the runtime does not know is refused) {
  start();
  spawn_request req;
  req.name = "patient";
  req.parents = {uuid::time_ordered()};
  req.on_parent_failure = "ignore";
  auto x = resolve_spawn(*state().ctx, req);
  CAF_REQUIRE(!x);
  CAF_CHECK_EQUAL(code_of(x.error()), errc::invalid_argument);
  req.on_parent_failure = "run";
  CAF_CHECK(resolve_spawn(*state().ctx, req));
}

CAF_TEST(a hold whose writer vanished ends after the request timeout) {
  start();
  subscribe({});
  auto& ctx = *state().ctx;
  auto task = in_channel("ok", "a");
  anon_send(state().events, hold_atom::value, task.id);
  emit(sink(), {make_event(task_event::started, task, ctx)});
  settle();
  CAF_CHECK(book->events.empty());
  advance(ctx.request_timeout());
  CAF_CHECK_EQUAL(book->seen(), (seen_t{{task_event::started, task.id}}));
}

CAF_TEST(a spawn by name starts from the definition and overrides what is set) {
  runtime_context ctx{cfg};
  spawn_request req;
  req.name = "patient";
  auto plain = resolve_spawn(ctx, req);
  CAF_REQUIRE(plain);
  CAF_CHECK_EQUAL(plain->channel_name, "ward");
  CAF_CHECK_EQUAL(plain->channel_args, "east");
  req.channel_name = "icu";
  req.channel_args = "";
  auto moved = resolve_spawn(ctx, req);
  CAF_REQUIRE(moved);
  CAF_CHECK_EQUAL(moved->channel_name, "icu");
  CAF_CHECK_EQUAL(moved->channel_args, "");
  auto spec = cafmq::detail::spawn_access::to_spec(moved->builder);
  CAF_CHECK_EQUAL(spec["channel_name"], "icu");
  CAF_CHECK_EQUAL(spec["max_attempts"], 5);
  req.retries = 2;
  req.ordered = true;
  spec = cafmq::detail::spawn_access::to_spec(resolve_spawn(ctx, req)->builder);
  CAF_CHECK_EQUAL(spec["max_attempts"], 3);
  CAF_CHECK_EQUAL(spec["ordered"], true);
}

CAF_TEST(a spawn by name knows the tasks that run on worker nodes) {
  task_options away;
  away.channel_name = "away";
  away.retries = 1;
  auto remote = std::make_shared<registry>();
  CAF_REQUIRE(
    !remote->add({"far", [](current_task&) { return caf::error{}; }, away}));
  cfg.remote_tasks = remote;
  runtime_context ctx{cfg};
  spawn_request req;
  req.name = "far";
  auto far = resolve_spawn(ctx, req);
  CAF_REQUIRE(far);
  CAF_CHECK_EQUAL(far->channel_name, "away");
  auto spec = cafmq::detail::spawn_access::to_spec(far->builder);
  CAF_CHECK_EQUAL(spec["max_attempts"], 2);
  // Known, but not claimed until a worker offers it.
  auto names = cfg.task_names();
  CAF_CHECK(std::find(names.begin(), names.end(), "far") == names.end());
}

CAF_TEST(a spawn by name refuses unknown names and bad input) {
  runtime_context ctx{cfg};
  spawn_request req;
  req.name = "nobody";
  CAF_CHECK_EQUAL(code_of(resolve_spawn(ctx, req).error()),
                  errc::unknown_handler);
  req.name = "ok";
  req.json = "{";
  CAF_CHECK_EQUAL(code_of(resolve_spawn(ctx, req).error()), errc::invalid_json);
  req.json = caf::none;
  req.retries = -3;
  CAF_CHECK_EQUAL(code_of(resolve_spawn(ctx, req).error()),
                  errc::invalid_argument);
  req.retries = caf::none;
  req.channel_name = std::string(300, 'x');
  CAF_CHECK_EQUAL(code_of(resolve_spawn(ctx, req).error()), errc::invalid_name);
}

CAF_TEST_FIXTURE_SCOPE_END()
