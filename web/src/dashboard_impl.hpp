// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// The dashboard's server state, shared by dashboard.cpp (start, stop,
// authentication) and routes.cpp (the page and the API).

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <httplib.h>

#include "api.hpp"
#include "auth.hpp"
#include "cafmq/web/dashboard.hpp"
#include "pool.hpp"
#include "series.hpp"

namespace cafmq::web {

/// Sends `body` as JSON with `status`.
inline void send_json(httplib::Response& res, int status,
                      const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

/// Sends the status and JSON body of `err`.
inline void send_error(httplib::Response& res, const caf::error& err) {
  auto [status, body] = error_response(err);
  send_json(res, status, body);
}

/// Replaces every `what` in `text`.
void replace_all(std::string& text, const std::string& what,
                 const std::string& with);

struct dashboard::impl {
  std::string url;
  dashboard_options opts;
  connection_options conn_opts;
  gate secrets;
  // The page with its per-process values filled in.
  std::string page;
  std::unique_ptr<connection_pool> pool;
  httplib::Server server;
  std::thread thread;
  std::uint16_t port = 0;
  // stop() may come from the owner and from a runtime's end at once.
  std::mutex mtx;
  bool started = false;
  // The charts' points (series.hpp), filled by `sampler` every
  // opts.chart_interval until `sampling` is false.
  std::unique_ptr<series_ring> series;
  std::thread sampler;
  std::mutex sample_mtx;
  std::condition_variable sample_cv;
  bool sampling = false;

  // Takes one sample into `series` (dashboard.cpp).
  void sample();

  bool is_api(const httplib::Request& req) const {
    return req.path.rfind("/api/", 0) == 0;
  }

  std::optional<credential> credential_of(const httplib::Request& req) const {
    return secrets.authenticate(req.get_header_value("Authorization"),
                                req.get_header_value("Cookie"));
  }

  // Authentication, and the Host check that keeps an open dashboard from
  // being read through DNS rebinding (dashboard.cpp).
  httplib::Server::HandlerResponse admit(const httplib::Request& req,
                                         httplib::Response& res);

  // Registers the page and the API (routes.cpp).
  void routes();

  // Read-only mode, CSRF and Origin, then the id of the task (or of what
  // `what` names); calls `f` with it.
  template <class F>
  void action(const httplib::Request& req, httplib::Response& res, F f,
              const char* what = "task") {
    if (opts.read_only) {
      send_json(
        res, 403,
        {{"error", "read_only"}, {"message", "this dashboard is read-only"}});
      return;
    }
    auto why = secrets.check_action(
      *credential_of(req), req.get_header_value("X-CSRF-Token"),
      req.get_header_value("Origin"), req.get_header_value("Host"),
      req.get_header_value("Sec-Fetch-Site"));
    if (!why.empty()) {
      send_json(res, 403, {{"error", "csrf"}, {"message", why}});
      return;
    }
    auto id = uuid::parse(req.matches[1].str());
    if (!id) {
      send_json(res, 400,
                bad_request(std::string{"not a "} + what + " id: '"
                            + req.matches[1].str() + "'"));
      return;
    }
    f(*id);
  }

  void serve_page(const httplib::Request& req, httplib::Response& res);
};

} // namespace cafmq::web
