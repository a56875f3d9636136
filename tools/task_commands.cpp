// SPDX-License-Identifier: BSD-3-Clause
// Commands on tasks: status, watch, list, retry, cancel.
#include "commands.hpp"

#include <csignal>
#include <iostream>
#include <thread>

#include <unistd.h>

#include "cafmq/client.hpp"
#include "cafmq/connection_options.hpp"
#include "cafmq/error.hpp"
#include "cafmq/migrate.hpp"
#include "cafmq/schedule.hpp"
#include "cafmq/status_json.hpp"
#include "cafmq/version.hpp"
#include "command_support.hpp"
#include "durations.hpp"

namespace cafmq::cli {

using std::chrono::microseconds;

int status_command(const context& ctx, const std::string& text) {
  auto id = parse_id(text);
  if (!id)
    return fail(id.error());
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (ctx.json) {
        auto x = inspect_task(conn, *id);
        if (!x)
          return std::move(x.error());
        auto out = status_json(*id, x->status);
        out["payload"] = opt_json(x->payload_json);
        out["unique_key"] = opt_json(x->unique_key);
        out["ordered"] = x->ordered;
        out["attempts"] = attempts_json(x->attempts);
        std::cout << out.dump() << '\n';
        return exit_ok;
      }
      auto x = inspect_task(conn, *id);
      if (!x)
        return std::move(x.error());
      print_status(*id, x->status);
      print_attempts(x->attempts);
      return exit_ok;
    });
}

int watch_command(const context& ctx, const std::string& text) {
  auto id = parse_id(text);
  if (!id)
    return fail(id.error());
  if (auto conn = connect(ctx); !conn)
    return fail(conn.error());
  auto err = watch(ctx.url, *id, [&](const task_status& st) {
    if (ctx.json)
      std::cout << status_json(*id, st).dump() << std::endl;
    else
      print_status(*id, st);
  });
  return err ? fail(err) : exit_ok;
}

int list_command(const context& ctx, const filter_args& args, int limit,
                 const std::string& after_text) {
  auto filter = to_filter(args);
  if (!filter)
    return fail(filter.error());
  std::optional<uuid> after;
  if (!after_text.empty()) {
    auto id = parse_id(after_text);
    if (!id)
      return fail(id.error());
    after = *id;
  }
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto page = list_tasks(conn, *filter, limit, after);
      if (!page)
        return std::move(page.error());
      if (ctx.json) {
        auto tasks = json::array();
        for (const auto& t : page->tasks)
          tasks.push_back(status_json(t.id, t.status));
        std::cout << json{{"tasks", tasks},
                          {"next", page->next ? json(to_string(*page->next))
                                              : json(nullptr)}}
                       .dump()
                  << '\n';
        return exit_ok;
      }
      if (page->tasks.empty()) {
        std::cout << "no tasks\n";
        return exit_ok;
      }
      print_table(std::cout, task_table(*page));
      if (page->next)
        std::cout << "more: add --after=" << to_string(*page->next) << '\n';
      return exit_ok;
    });
}

int retry_command(const context& ctx, const std::vector<std::string>& texts,
                  const filter_args& args, int limit) {
  auto targets = to_targets("retry", texts, args);
  if (!targets)
    return fail(targets.error());
  auto& ids = targets->first;
  auto& filter = targets->second;
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto r
        = ids.empty() ? retry_matching(conn, filter, limit) : retry(conn, ids);
      if (!r)
        return std::move(r.error());
      if (ctx.json) {
        auto retried = json::array();
        for (const auto& id : r->retried)
          retried.push_back(to_string(id));
        auto skipped = json::array();
        for (const auto& [id, why] : r->skipped)
          skipped.push_back(json{{"id", to_string(id)}, {"reason", why}});
        std::cout << json{{"retried", retried}, {"skipped", skipped}}.dump()
                  << '\n';
      } else {
        for (const auto& [id, why] : r->skipped)
          std::cout << "task=" << to_string(id) << " not retried: " << why
                    << '\n';
        std::cout << "retried " << r->retried.size() << '\n';
      }
      // Asked for one by id and it could not be: an error, like `cancel`.
      if (!ids.empty() && r->retried.empty())
        return r->skipped.size() == 1 && r->skipped[0].second == "unknown"
                 ? exit_not_found
                 : exit_error;
      return exit_ok;
    });
}

int cancel_command(const context& ctx, const std::vector<std::string>& texts,
                   const filter_args& args, int limit) {
  auto targets = to_targets("cancel", texts, args);
  if (!targets)
    return fail(targets.error());
  auto& ids = targets->first;
  auto& filter = targets->second;
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      if (ids.empty()) {
        auto counts = cancel_matching(conn, filter, limit);
        if (!counts)
          return std::move(counts.error());
        print_cancel_counts(ctx, *counts);
        return exit_ok;
      }
      auto out = json::array();
      int rc = exit_ok;
      for (const auto& id : ids) {
        auto result = cancel(conn, id);
        if (!result) {
          if (ctx.json)
            out.push_back(
              json{{"id", to_string(id)}, {"error", render(result.error())}});
          else
            std::cerr << "cafmq: " << render(result.error()) << '\n';
          rc = code_of(result.error()) == errc::unknown_task ? exit_not_found
                                                             : exit_error;
          continue;
        }
        if (ctx.json)
          out.push_back(
            json{{"id", to_string(id)}, {"cancel", to_string(*result)}});
        else
          std::cout << "task=" << to_string(id)
                    << " cancel=" << to_string(*result) << std::endl;
      }
      if (ctx.json)
        std::cout << out.dump() << '\n';
      return rc;
    });
}

} // namespace cafmq::cli
