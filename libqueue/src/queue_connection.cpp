// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/detail/queue_connection.hpp"

#include <pqxx/pqxx>

#include "cafmq/detail/spawn_access.hpp"
#include "cafmq/error.hpp"
#include "cafmq/sql.hpp"
#include "sql_util.hpp"
#include "statements.hpp"

namespace cafmq {

namespace {

// A reopened connection would sit on a socket that the breaker does not
// watch: the owner reconnects instead. libpqxx 6 deprecates the switch
// because 7 never reopens.
void keep_broken(pqxx::connection_base& conn) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  conn.inhibit_reactivation(true);
#pragma GCC diagnostic pop
}

} // namespace

struct queue_connection::impl {
  impl(std::shared_ptr<pqxx::connection_base> conn,
       std::shared_ptr<connection_breaker> breaker)
    : conn(std::move(conn)), breaker(std::move(breaker)) {
    // nop
  }

  ~impl() {
    breaker->release();
  }

  // Runs `f` in a transaction of its own and commits it.
  template <class F>
  auto run(F f) -> caf::expected<decltype(f(std::declval<pqxx::work&>()))> {
    using result_type = caf::expected<decltype(f(std::declval<pqxx::work&>()))>;
    return guarded([&]() -> result_type {
      pqxx::work tx{*conn};
      auto result = f(tx);
      tx.commit();
      return result;
    });
  }

  // Runs `f`, one statement, on its own: the statement is its own
  // transaction, without the round trips of BEGIN and COMMIT.
  template <class F>
  auto run_one(F f)
    -> caf::expected<decltype(f(std::declval<pqxx::transaction_base&>()))> {
    using result_type
      = caf::expected<decltype(f(std::declval<pqxx::transaction_base&>()))>;
    return guarded([&]() -> result_type {
      pqxx::nontransaction tx{*conn};
      return f(tx);
    });
  }

  std::shared_ptr<pqxx::connection_base> conn;
  std::shared_ptr<connection_breaker> breaker;
};

queue_connection::queue_connection(std::unique_ptr<impl> ptr)
  : impl_(std::move(ptr)) {
  // nop
}

queue_connection::~queue_connection() {
  // nop
}

caf::expected<std::shared_ptr<queue_connection>>
queue_connection::open(const std::string& url, const connection_options& opts) {
  auto conn = open_connection(url, opts);
  if (!conn)
    return std::move(conn.error());
  keep_broken(**conn);
  auto breaker = connection_breaker::make((*conn)->sock());
  if (!breaker)
    return std::move(breaker.error());
  auto ptr = std::make_unique<impl>(std::move(*conn), std::move(*breaker));
  return std::shared_ptr<queue_connection>{
    new queue_connection(std::move(ptr))};
}

caf::expected<claim_result> queue_connection::claim(const claim_request& req) {
  auto result = impl_->run_one([&](pqxx::transaction_base& tx) {
    return detail::claim(tx, req, cursor_);
  });
  if (result && req.ids.empty())
    cursor_ = result->cursor;
  return result;
}

void record_started(pqxx::connection_base& conn, const std::string& node,
                    const std::optional<std::vector<uuid>>& started,
                    const std::vector<uuid>& worker_ids,
                    const std::vector<int>& attempts,
                    const std::vector<std::string>& workers) {
  std::optional<std::string> ids;
  if (started)
    ids = detail::uuid_array(*started);
  static constexpr detail::statement st{"cafmq_started", sql::record_started};
  pqxx::nontransaction tx{conn};
  detail::exec_statement(tx, st, node, ids, detail::uuid_array(worker_ids),
                         detail::int_array(attempts),
                         detail::text_array(workers));
}

caf::expected<dispatched_spawn>
queue_connection::spawn_claimed(const spawn_builder& task,
                                const claim_request& req) {
  if (auto err = task.validate())
    return err;
  if (!task.id())
    return make_error(errc::invalid_argument,
                      "a directly dispatched spawn needs its id");
  std::string specs = "[";
  detail::spawn_access::write_spec(task, specs);
  specs += ']';
  return impl_->run_one([&](pqxx::transaction_base& tx) {
    return detail::spawn_claimed(tx, specs, req);
  });
}

caf::expected<std::vector<uuid>>
queue_connection::complete(const std::vector<attempt_ref>& xs,
                           const std::vector<std::string>& results,
                           const std::vector<std::string>& workers) {
  return impl_->run_one([&](pqxx::transaction_base& tx) {
    return detail::complete(tx, xs, results, workers);
  });
}

caf::expected<std::vector<fail_result>>
queue_connection::fail(const std::vector<attempt_failure>& xs) {
  return impl_->run_one(
    [&](pqxx::transaction_base& tx) { return detail::fail(tx, xs); });
}

caf::expected<std::vector<uuid>>
queue_connection::release(const std::vector<attempt_ref>& xs) {
  return impl_->run_one(
    [&](pqxx::transaction_base& tx) { return detail::release(tx, xs); });
}

caf::expected<recorded_outcomes>
queue_connection::record(const std::vector<attempt_ref>& completed,
                         const std::vector<attempt_failure>& failed,
                         const std::vector<attempt_ref>& released,
                         const std::vector<std::string>& results,
                         const std::vector<attempt_ref>& abandoned,
                         const std::vector<std::string>& workers) {
  auto write = [&](pqxx::transaction_base& tx) {
    recorded_outcomes result;
    if (!completed.empty())
      result.completed = detail::complete(tx, completed, results, workers);
    if (!failed.empty())
      result.failed = detail::fail(tx, failed);
    if (!released.empty())
      detail::release(tx, released);
    if (!abandoned.empty())
      detail::hand_back(tx, abandoned);
    return result;
  };
  // One kind of outcome is one statement; more need a transaction.
  auto kinds = !completed.empty() + !failed.empty() + !released.empty()
               + !abandoned.empty();
  return kinds <= 1 ? impl_->run_one(write) : impl_->run(write);
}

caf::expected<std::vector<lease_state>>
queue_connection::keep_alive(const std::vector<attempt_ref>& xs,
                             std::chrono::microseconds lease) {
  return impl_->run_one([&](pqxx::transaction_base& tx) {
    return detail::keep_alive(tx, xs, lease);
  });
}

caf::error queue_connection::complete(const attempt_ref& x,
                                      const std::string& result) {
  auto done
    = complete(std::vector<attempt_ref>{x}, std::vector<std::string>{result});
  if (!done)
    return std::move(done.error());
  if (done->empty())
    return stale_attempt_error(x);
  return caf::none;
}

caf::error queue_connection::checkpoint(const attempt_ref& x,
                                        const cafmq::checkpoint& cp) {
  auto ok
    = impl_->run([&](pqxx::work& tx) { return detail::checkpoint(tx, x, cp); });
  if (!ok)
    return std::move(ok.error());
  if (!*ok)
    return stale_attempt_error(x);
  return caf::none;
}

caf::error queue_connection::keep_alive(const attempt_ref& x,
                                        std::chrono::microseconds lease) {
  auto owned = keep_alive(std::vector<attempt_ref>{x}, lease);
  if (!owned)
    return std::move(owned.error());
  if (!renewed_one(*owned))
    return stale_attempt_error(x);
  return caf::none;
}

pqxx::connection_base& queue_connection::connection() noexcept {
  return *impl_->conn;
}

const std::shared_ptr<connection_breaker>&
queue_connection::breaker() const noexcept {
  return impl_->breaker;
}

} // namespace cafmq
