// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/listening_connection.hpp"

#include <stdexcept>

#include <pqxx/pqxx>

#include "cafmq/actors/detail/database.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/detail/connection_breaker.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

void listening_connection::open(const runtime_context& ctx, const char* role) {
  close();
  auto& cfg = ctx.cfg;
  auto opened = open_connection(cfg.listen_url.empty() ? cfg.database_url
                                                       : cfg.listen_url,
                                connection_for(cfg, role));
  if (!opened)
    throw std::runtime_error(render(opened.error()));
  conn = std::move(*opened);
  counted = count_connection(ctx.metrics);
  if (auto made = connection_breaker::make(conn->sock()))
    breaker = std::move(*made);
}

void listening_connection::close() {
  if (breaker)
    breaker->release();
  breaker.reset();
  conn.reset();
  counted.reset();
}

std::chrono::milliseconds
listening_connection::backoff_after(std::chrono::milliseconds last) {
  return std::min(std::chrono::milliseconds{5000},
                  std::max(std::chrono::milliseconds{100}, last * 2));
}

} // namespace cafmq::actors
