// SPDX-License-Identifier: BSD-3-Clause
// An order pipeline as a workflow, spawned in one transaction per order:
//
//   reserve_stock ─┐
//   charge_card  ──┼─> ship ──> close_order (runs whatever happened before)
//   print_label  ──┘
//
// The three steps run at once (fan-out); ship waits for all three and uses
// their results (fan-in); close_order runs even when a step failed. Order 2's
// card is declined: its ship step is cancelled, its close_order still runs
// and sees why. ship completes inside its own transaction (complete(tx)),
// which writes the shipment and readies close_order in the same commit.

#include "cafmq/workflow.hpp"
#include "cafmq/current_task.hpp"
#include "example_support.hpp"

namespace {

std::string url;

caf::error reserve_stock(cafmq::current_task& task) {
  auto order = task.json<nlohmann::json>();
  if (!order)
    return order.error();
  return task.set_result(nlohmann::json{{"shelf", "B-" + order->dump()}});
}

caf::error charge_card(cafmq::current_task& task) {
  auto order = task.json<nlohmann::json>();
  if (!order)
    return order.error();
  if (order->get<int>() == 2)
    return cafmq::make_error(cafmq::errc::handler_failed, "card declined");
  return task.set_result(nlohmann::json{{"charged", 42.5}});
}

caf::error print_label(cafmq::current_task& task) {
  return task.set_result(
    nlohmann::json{{"label", "LBL-" + task.raw_json().value_or("")}});
}

// Fan-in: one result from each step.
caf::error ship(cafmq::current_task& task) {
  nlohmann::json shipment;
  for (const auto& p : task.parent_results())
    shipment[p.name] = nlohmann::json::parse(p.result);
  pqxx::connection conn{url};
  pqxx::work tx{conn};
  tx.exec_params("INSERT INTO example_shipments (order_id, shipment) VALUES "
                 "($1, $2::jsonb)",
                 task.raw_json().value_or(""), shipment.dump());
  // The shipment row and the completion commit together; close_order is
  // ready in the same commit.
  return task.complete(tx);
}

caf::error close_order(cafmq::current_task& task) {
  auto order = task.json<nlohmann::json>();
  if (!order)
    return order.error();
  auto parents = task.parent_results();
  auto shipped
    = !parents.empty() && parents.front().state == cafmq::task_state::completed;
  std::cout << "order " << *order << ": "
            << (shipped ? "shipped"
                        : "not shipped (" + parents.front().error + ")")
            << std::endl;
  return task.set_result(nlohmann::json{{"shipped", shipped}});
}

} // namespace

int main() {
  url = example::database_url();
  cafmq::task_options once;
  once.retries = 0;
  auto tasks = std::make_shared<cafmq::registry>();
  std::vector<std::pair<const char*, cafmq::task_handler>> handlers{
    {"reserve_stock", reserve_stock},
    {"charge_card", charge_card},
    {"print_label", print_label},
    {"ship", ship},
    {"close_order", close_order}};
  for (auto& [name, handler] : handlers)
    if (auto err = tasks->add({name, handler, once}))
      return example::fail(err);
  pqxx::connection conn{url};
  pqxx::nontransaction{conn}.exec0(
    "CREATE TABLE IF NOT EXISTS example_shipments (order_id text, shipment "
    "jsonb); TRUNCATE example_shipments");
  auto runner = example::start_runner(url, tasks);
  std::vector<cafmq::uuid> closes;
  for (int order : {1, 2}) {
    cafmq::workflow w;
    std::vector<cafmq::uuid> steps;
    for (auto name : {"reserve_stock", "charge_card", "print_label"})
      steps.push_back(w.add(tasks->find(name)->builder().json(order)));
    auto shipped = w.add(tasks->find("ship")->builder().json(order), steps);
    closes.push_back(w.add(tasks->find("close_order")->builder().json(order),
                           {shipped}, cafmq::parent_failure::run));
    pqxx::work tx{conn};
    if (auto spawned = w.spawn(tx); !spawned)
      return example::fail(spawned.error());
    tx.commit();
    std::cout << "order " << order << ": workflow " << cafmq::to_string(w.id())
              << " spawned" << std::endl;
  }
  if (!example::wait_until_finished(conn, closes))
    return 1;
  auto first = cafmq::status(conn, closes[0]);
  auto second = cafmq::status(conn, closes[1]);
  auto shipments = pqxx::nontransaction{conn}
                     .exec1("SELECT count(*) FROM example_shipments WHERE "
                            "order_id = '1'")[0]
                     .as<int>();
  std::cout << "shipments of order 1: " << shipments << std::endl;
  auto shipped = [](const caf::expected<cafmq::task_status>& st) {
    return st && st->state == cafmq::task_state::completed && st->result
           && nlohmann::json::parse(*st->result).value("shipped", false);
  };
  return shipped(first) && !shipped(second) && second
             && second->state == cafmq::task_state::completed && shipments == 1
           ? 0
           : 1;
}
