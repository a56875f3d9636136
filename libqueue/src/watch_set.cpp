// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/detail/watch_set.hpp"

#include <algorithm>
#include <stdexcept>

#include <pqxx/pqxx>

#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "sql_util.hpp"

namespace cafmq::detail {

namespace {

using steady = std::chrono::steady_clock;

bool same_step(const task_status& x, const task_status& y) {
  return x.state == y.state && x.attempt == y.attempt;
}

} // namespace

struct watch_set::impl {
  // Collects the cafmq_status payloads ("id state attempt") of the tasks
  // in the set, by task.
  struct receiver : pqxx::notification_receiver {
    receiver(pqxx::connection_base& c, impl& owner)
      : pqxx::notification_receiver(c, "cafmq_status"), owner(owner) {}

    void operator()(const std::string& payload, int) override {
      auto space = payload.find(' ');
      if (space == std::string::npos)
        return;
      auto id = uuid::parse(payload.substr(0, space));
      if (!id)
        return;
      auto i = owner.tasks.find(*id);
      if (i == owner.tasks.end())
        return;
      i->second.steps.push_back(payload.substr(space + 1));
      i->second.due = true;
    }

    impl& owner;
  };

  struct entry {
    // What was reported last; none before the first read.
    std::optional<task_status> last;
    // Registered in cafmq.watches on the current connection.
    bool registered = false;
    // The row is read at the next read.
    bool due = true;
    // Notified steps since the last read: "state attempt", in commit order.
    std::vector<std::string> steps;
    // A reservation expires at this point without a notification.
    std::optional<steady::time_point> deadline;
  };

  pqxx::connection_base* conn = nullptr;
  std::unique_ptr<receiver> rcv;
  std::chrono::milliseconds refresh;
  steady::time_point next_refresh;
  std::map<uuid, entry> tasks;
  // Registrations to delete from cafmq.watches.
  std::vector<uuid> gone;

  explicit impl(std::chrono::milliseconds refresh) : refresh(refresh) {
    // nop
  }

  void bind(pqxx::connection_base& c) {
    rcv.reset();
    conn = &c;
    rcv = std::make_unique<receiver>(c, *this);
    next_refresh = steady::now() + refresh;
  }

  void leave(std::map<uuid, entry>::iterator i) {
    gone.push_back(i->first);
    tasks.erase(i);
  }

  void unregister() {
    if (gone.empty())
      return;
    auto ids = std::move(gone);
    gone.clear();
    pqxx::nontransaction{*conn}.exec_params0(sql::watch_remove,
                                             uuid_array(ids));
  }

  void register_new() {
    std::vector<uuid> ids;
    for (auto& [id, x] : tasks)
      if (!x.registered)
        ids.push_back(id);
    if (ids.empty())
      return;
    pqxx::nontransaction{*conn}.exec_params0(sql::watch_add, uuid_array(ids));
    for (auto& id : ids) {
      auto& x = tasks.at(id);
      x.registered = true;
      x.due = true;
    }
  }

  // Reports the notified steps between what was reported and `row`, then
  // `row` itself if it differs; stops at a final state.
  static void advance(const uuid& id, entry& x, const task_status& row,
                      const report& f) {
    auto& last = *x.last;
    for (auto& payload : x.steps) {
      auto space = payload.find(' ');
      auto state = parse_task_state(payload.substr(0, space));
      if (!state || space == std::string::npos)
        continue;
      auto step = last;
      step.state = *state;
      step.attempt = std::stoi(payload.substr(space + 1));
      if (same_step(step, row))
        step = row;
      if (!same_step(step, last)) {
        last = step;
        f(id, step);
      }
      if (is_final(last.state))
        return;
    }
    // Steps of commits after the read may have come in with it: the row is
    // then behind them, and is not reported after them.
    if (!same_step(row, last) && progress(row) >= progress(last)) {
      last = row;
      f(id, row);
    }
  }

  // Where a state stands in a task's life: pending after `attempt` attempts,
  // then running its next, then pending again or ended.
  static int progress(const task_status& x) {
    return 2 * x.attempt - (x.state == task_state::running ? 1 : 0);
  }

  void read_due(const report& f) {
    std::vector<uuid> ids;
    for (auto& [id, x] : tasks)
      if (x.due)
        ids.push_back(id);
    if (ids.empty())
      return;
    auto rows
      = pqxx::nontransaction{*conn}.exec_params(sql::status, uuid_array(ids));
    // The notifications of the commits this read sees came with its answer:
    // take them in first, so that their steps come before the row (a
    // periodic re-read that overtook them replayed them after it).
    conn->get_notifs();
    std::map<uuid, pqxx::row> by_id;
    for (const auto& row : rows)
      by_id.emplace(to_uuid(row["id"]), row);
    auto now = steady::now();
    for (auto& id : ids) {
      auto i = tasks.find(id);
      if (i == tasks.end())
        continue;
      auto& x = i->second;
      auto r = by_id.find(id);
      if (r == by_id.end()) {
        auto err = x.last ? make_error(errc::reservation_expired,
                                       "task " + to_string(id) + " disappeared")
                          : make_error(errc::unknown_task,
                                       "no task with id " + to_string(id));
        leave(i);
        f(id, std::move(err));
        continue;
      }
      auto& row = r->second;
      // Expired at its deadline, not when maintenance removes it.
      if (row["expired"].as<bool>()) {
        leave(i);
        f(id, make_error(errc::reservation_expired,
                         "task " + to_string(id)
                           + " was not committed before its deadline"));
        continue;
      }
      x.deadline.reset();
      if (!row["commit_left_us"].is_null())
        x.deadline = now
                     + std::chrono::microseconds{
                       row["commit_left_us"].as<std::int64_t>()};
      auto status = to_task_status(row);
      if (!x.last) {
        x.last = status;
        f(id, status);
      } else {
        advance(id, x, status, f);
      }
      x.steps.clear();
      x.due = false;
      if (is_final(x.last->state))
        leave(i);
    }
  }

  // How long the next wait may block: up to `max_wait`, less for the next
  // refresh or reservation deadline.
  std::chrono::microseconds wait_bound(std::chrono::microseconds max_wait) {
    using std::chrono::microseconds;
    auto now = steady::now();
    auto until = std::min(steady::time_point{now + max_wait}, next_refresh);
    for (auto& [id, x] : tasks)
      if (x.deadline)
        until = std::min(until, *x.deadline + std::chrono::milliseconds{1});
    auto left = std::chrono::duration_cast<microseconds>(until - now);
    return std::max(left, microseconds{1000});
  }
};

watch_set::watch_set(std::chrono::milliseconds refresh)
  : impl_(std::make_unique<impl>(refresh)) {
  // nop
}

watch_set::~watch_set() = default;

void watch_set::add(const uuid& id) {
  impl_->tasks.emplace(id, impl::entry{});
}

void watch_set::remove(const uuid& id) {
  if (auto i = impl_->tasks.find(id); i != impl_->tasks.end())
    impl_->leave(i);
}

void watch_set::poll(std::chrono::microseconds max_wait, const report& f) {
  auto& st = *impl_;
  if (st.conn == nullptr)
    throw std::logic_error("watch_set::poll without a connection");
  st.unregister();
  st.register_new();
  st.read_due(f);
  if (!st.tasks.empty()) {
    auto us = st.wait_bound(max_wait);
    st.conn->await_notification(us.count() / 1000000, us.count() % 1000000);
    auto now = steady::now();
    if (now >= st.next_refresh) {
      st.next_refresh = now + st.refresh;
      for (auto& [id, x] : st.tasks)
        x.due = true;
    }
    for (auto& [id, x] : st.tasks)
      if (x.deadline && *x.deadline <= now)
        x.due = true;
    st.read_due(f);
  }
  st.unregister();
}

void watch_set::detach() {
  auto& st = *impl_;
  st.rcv.reset();
  st.conn = nullptr;
  // The old session's registrations end with it (cafmq.prune removes them).
  st.gone.clear();
  for (auto& [id, x] : st.tasks) {
    x.registered = false;
    x.due = true;
    x.steps.clear();
  }
}

void watch_set::attach(pqxx::connection_base& conn) {
  if (impl_->conn != nullptr)
    detach();
  impl_->bind(conn);
}

std::optional<task_status> watch_set::last(const uuid& id) const {
  auto i = impl_->tasks.find(id);
  if (i == impl_->tasks.end())
    return std::nullopt;
  return i->second.last;
}

std::size_t watch_set::size() const {
  return impl_->tasks.size();
}

} // namespace cafmq::detail
