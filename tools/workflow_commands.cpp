// SPDX-License-Identifier: BSD-3-Clause
// `cafmq workflow show|cancel|retry ID`: one workflow's tasks.
#include "workflow_commands.hpp"

#include <algorithm>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "cafmq/admin.hpp"
#include "cafmq/status_json.hpp"
#include "command_support.hpp"
#include "commands.hpp"

namespace cafmq::cli {

namespace {

// The parents of `x`: by their places in the table (#1 is the first task),
// in table order, then by id those that are not members.
std::string parent_labels(const std::vector<workflow_task>& xs,
                          const workflow_task& x) {
  std::vector<size_t> rows;
  std::vector<std::string> others;
  for (const auto& p : x.parents) {
    auto i = std::find_if(xs.begin(), xs.end(),
                          [&](const workflow_task& y) { return y.id == p; });
    if (i != xs.end())
      rows.push_back(static_cast<size_t>(i - xs.begin()) + 1);
    else
      others.push_back(to_string(p));
  }
  std::sort(rows.begin(), rows.end());
  std::string result;
  for (auto row : rows)
    result += (result.empty() ? "#" : ",#") + std::to_string(row);
  for (const auto& id : others)
    result += (result.empty() ? "" : ",") + id;
  return result;
}

int show_workflow(const context& ctx, const uuid& id) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto xs = workflow_tasks(conn, id);
      if (!xs)
        return std::move(xs.error());
      if (xs->empty()) {
        std::cerr << "cafmq: no workflow " << to_string(id) << '\n';
        return exit_not_found;
      }
      if (ctx.json) {
        std::cout << workflow_json(id, *xs).dump() << '\n';
        return exit_ok;
      }
      std::vector<std::vector<std::string>> rows{
        {"#", "TASK", "NAME", "STATE", "PARENTS", "RESULT / ERROR"}};
      for (size_t i = 0; i < xs->size(); ++i) {
        const auto& x = (*xs)[i];
        auto parents = parent_labels(*xs, x);
        if (x.runs_after_failure)
          parents += " (runs after failure)";
        rows.push_back({std::to_string(i + 1), to_string(x.id), x.name,
                        to_string(x.state), parents,
                        clip(x.result ? *x.result : x.error.value_or(""), 60)});
      }
      print_table(std::cout, rows);
      return exit_ok;
    });
}

int cancel_workflow_command(const context& ctx, const uuid& id) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto counts = cancel_workflow(conn, id);
      if (!counts)
        return std::move(counts.error());
      print_cancel_counts(ctx, *counts);
      return exit_ok;
    });
}

int retry_workflow_command(const context& ctx, const uuid& id) {
  return with_connection(
    ctx, [&](pqxx::connection_base& conn) -> caf::expected<int> {
      auto r = retry_workflow(conn, id);
      if (!r)
        return std::move(r.error());
      if (ctx.json) {
        auto retried = json::array();
        for (const auto& x : r->retried)
          retried.push_back(to_string(x));
        std::cout << json{{"retried", retried}}.dump() << '\n';
      } else {
        for (const auto& [task, why] : r->skipped)
          std::cout << "task=" << to_string(task) << " not retried: " << why
                    << '\n';
        std::cout << "retried " << r->retried.size()
                  << " failed (their cancelled descendants wait again)\n";
      }
      return exit_ok;
    });
}

} // namespace

std::pair<CLI::App*, std::function<int(const context&)>>
add_workflow_commands(CLI::App& app) {
  auto text = std::make_shared<std::string>();
  auto* workflow = app.add_subcommand(
    "workflow", "one workflow's tasks (cafmq::workflow, cafmq::batch): show "
                "the graph, cancel it, retry what failed");
  workflow->require_subcommand(1);
  auto* show_cmd = workflow->add_subcommand(
    "show", "the workflow's tasks in spawn order: state, parents, result");
  auto* cancel_cmd = workflow->add_subcommand(
    "cancel", "cancel every unfinished task (running ones are asked to stop)");
  auto* retry_cmd = workflow->add_subcommand(
    "retry", "retry the failed tasks; the descendants they cancelled wait "
             "for them again");
  for (auto* cmd : {show_cmd, cancel_cmd, retry_cmd})
    cmd->add_option("id", *text, "the workflow's id")->required();
  auto run = [=](const context& ctx) {
    auto id = parse_id(*text);
    if (!id)
      return fail(id.error());
    auto* cmd = workflow->get_subcommands().front();
    if (cmd == show_cmd)
      return show_workflow(ctx, *id);
    if (cmd == cancel_cmd)
      return cancel_workflow_command(ctx, *id);
    return retry_workflow_command(ctx, *id);
  };
  return {workflow, run};
}

} // namespace cafmq::cli
