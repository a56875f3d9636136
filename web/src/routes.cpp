// SPDX-License-Identifier: BSD-3-Clause
// The dashboard's page and JSON API: each route calls one function of
// cafmq/admin.hpp or cafmq/client.hpp on a pooled connection of its own.
#include <vector>

#include "cafmq/admin.hpp"
#include "cafmq/client.hpp"
#include "cafmq/error.hpp"
#include "cafmq/status_json.hpp"
#include "dashboard_impl.hpp"

namespace cafmq::web {

namespace {

using json = nlohmann::json;

std::multimap<std::string, std::string> params_of(const httplib::Request& req) {
  return {req.params.begin(), req.params.end()};
}

} // namespace

void dashboard::impl::serve_page(const httplib::Request&,
                                 httplib::Response& res) {
  // A fresh nonce per response: only the page's own script and style
  // apply.
  auto nonce = random_hex(16);
  auto body = page;
  replace_all(body, "{{nonce}}", nonce);
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'nonce-" + nonce
                   + "'; style-src 'nonce-" + nonce
                   + "'; connect-src 'self'; img-src 'none'; "
                     "base-uri 'none'; form-action 'none'; "
                     "frame-ancestors 'none'");
  res.set_content(body, "text/html; charset=utf-8");
}

void dashboard::impl::routes() {
  server.set_pre_routing_handler(
    [this](const httplib::Request& req, httplib::Response& res) {
      return admit(req, res);
    });
  server.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    serve_page(req, res);
  });
  server.Get(
    "/api/stats", [this](const httplib::Request& req, httplib::Response& res) {
      auto finished = req.get_param_value("finished") == "1";
      auto stats = pool->with([&](pqxx::connection_base& conn) {
        return queue_stats(conn, finished);
      });
      if (!stats)
        return send_error(res, stats.error());
      send_json(res, 200,
                {{"finished", finished}, {"channels", to_json(*stats)}});
    });
  server.Get("/api/series",
             [this](const httplib::Request&, httplib::Response& res) {
               json points = json::array();
               for (auto& x : series->points())
                 points.push_back(to_json(x));
               send_json(res, 200,
                         {{"interval_ms", opts.chart_interval.count() > 0
                                            ? opts.chart_interval.count()
                                            : 0},
                          {"points", std::move(points)}});
             });
  server.Get("/api/tasks", [this](const httplib::Request& req,
                                  httplib::Response& res) {
    auto request = parse_list_request(params_of(req));
    if (!request)
      return send_json(res, 400, bad_request(render(request.error())));
    auto page = pool->with([&](pqxx::connection_base& conn) {
      return list_tasks(conn, request->filter, request->limit, request->after);
    });
    if (!page)
      return send_error(res, page.error());
    json tasks = json::array();
    for (auto& row : page->tasks)
      tasks.push_back(to_json(row));
    send_json(
      res, 200,
      {{"tasks", std::move(tasks)},
       {"next", page->next ? json(to_string(*page->next)) : json(nullptr)}});
  });
  server.Get(R"(/api/tasks/([^/]+))", [this](const httplib::Request& req,
                                             httplib::Response& res) {
    auto id = uuid::parse(req.matches[1].str());
    if (!id)
      return send_json(
        res, 400, bad_request("not a task id: '" + req.matches[1].str() + "'"));
    auto detail = pool->with(
      [&](pqxx::connection_base& conn) { return inspect_task(conn, *id); });
    if (!detail)
      return send_error(res, detail.error());
    send_json(res, 200, to_json(*detail));
  });
  server.Get(R"(/api/workflows/([^/]+))", [this](const httplib::Request& req,
                                                 httplib::Response& res) {
    auto id = uuid::parse(req.matches[1].str());
    if (!id)
      return send_json(
        res, 400,
        bad_request("not a workflow id: '" + req.matches[1].str() + "'"));
    auto tasks = pool->with(
      [&](pqxx::connection_base& conn) { return workflow_tasks(conn, *id); });
    if (!tasks)
      return send_error(res, tasks.error());
    if (tasks->empty())
      return send_json(
        res, 404,
        {{"error", "not_found"}, {"message", "no workflow " + to_string(*id)}});
    send_json(res, 200, workflow_json(*id, *tasks));
  });
  server.Post(
    R"(/api/tasks/([^/]+)/cancel)",
    [this](const httplib::Request& req, httplib::Response& res) {
      action(req, res, [&](const uuid& id) {
        auto done = pool->with(
          [&](pqxx::connection_base& conn) { return cancel(conn, id); });
        if (!done)
          return send_error(res, done.error());
        send_json(res, 200,
                  {{"id", to_string(id)}, {"result", to_string(*done)}});
      });
    });
  server.Post(R"(/api/tasks/([^/]+)/retry)", [this](const httplib::Request& req,
                                                    httplib::Response& res) {
    action(req, res, [&](const uuid& id) {
      auto done = pool->with([&](pqxx::connection_base& conn) {
        return retry(conn, std::vector<uuid>{id});
      });
      if (!done)
        return send_error(res, done.error());
      if (!done->skipped.empty())
        return send_json(
          res, 409,
          {{"error", "not_retried"}, {"message", done->skipped[0].second}});
      send_json(res, 200, {{"id", to_string(id)}, {"result", "retried"}});
    });
  });
  server.Post(R"(/api/workflows/([^/]+)/cancel)",
              [this](const httplib::Request& req, httplib::Response& res) {
                action(
                  req, res,
                  [&](const uuid& id) {
                    auto done = pool->with([&](pqxx::connection_base& conn) {
                      return cancel_workflow(conn, id);
                    });
                    if (!done)
                      return send_error(res, done.error());
                    json body = cancel_counts_json(*done);
                    body["workflow"] = to_string(id);
                    send_json(res, 200, body);
                  },
                  "workflow");
              });
  server.Post(R"(/api/workflows/([^/]+)/retry)",
              [this](const httplib::Request& req, httplib::Response& res) {
                action(
                  req, res,
                  [&](const uuid& id) {
                    auto done = pool->with([&](pqxx::connection_base& conn) {
                      return retry_workflow(conn, id);
                    });
                    if (!done)
                      return send_error(res, done.error());
                    json retried = json::array();
                    for (const auto& x : done->retried)
                      retried.push_back(to_string(x));
                    send_json(res, 200,
                              {{"workflow", to_string(id)},
                               {"retried", std::move(retried)}});
                  },
                  "workflow");
              });
  server.set_exception_handler(
    [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
        // what stays
      }
      send_json(res, 500, {{"error", "internal"}, {"message", what}});
    });
  server.set_error_handler(
    [this](const httplib::Request& req, httplib::Response& res) {
      if (res.status == 404 && res.body.empty() && is_api(req))
        send_json(res, 404,
                  {{"error", "not_found"}, {"message", "no such API route"}});
    });
}

} // namespace cafmq::web
