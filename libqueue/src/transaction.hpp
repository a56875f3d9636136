// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Running the client functions in a transaction of their own (private).

#include <utility>

#include <pqxx/pqxx>

#include "cafmq/error.hpp"

namespace cafmq::detail {

/// Runs `f` in a transaction of its own on `conn` and commits when `f`
/// succeeds; exceptions become errors.
template <class F>
auto in_transaction(pqxx::connection_base& conn, F f)
  -> decltype(f(std::declval<pqxx::transaction_base&>())) {
  return guarded([&]() -> decltype(f(std::declval<pqxx::transaction_base&>())) {
    pqxx::work tx{conn};
    auto result = f(tx);
    if (result)
      tx.commit();
    return result;
  });
}

} // namespace cafmq::detail
