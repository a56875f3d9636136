// SPDX-License-Identifier: BSD-3-Clause
// An ordered channel: each customer's order steps run strictly one after
// another in spawn order, while different customers (channel args) run in
// parallel.

#include <mutex>

#include "cafmq/current_task.hpp"
#include "cafmq/spawn.hpp"
#include "example_support.hpp"

namespace {

std::mutex out_mtx;

caf::error order_step(cafmq::current_task& task) {
  auto step = task.json<int>();
  if (!step)
    return step.error();
  std::this_thread::sleep_for(std::chrono::milliseconds{20});
  std::lock_guard<std::mutex> guard{out_mtx};
  std::cout << task.data().channel_args << ": step " << *step << std::endl;
  return caf::none;
}

} // namespace

int main() {
  auto url = example::database_url();
  cafmq::task_options defaults;
  defaults.channel_name = "orders";
  defaults.ordered = true;
  auto tasks = std::make_shared<cafmq::registry>();
  if (auto err = tasks->add({"order_step", order_step, defaults}))
    return example::fail(err);
  auto runner = example::start_runner(url, tasks, 4, 8);
  pqxx::connection conn{url};
  std::vector<cafmq::spawn_builder> steps;
  for (int i = 1; i <= 5; ++i)
    for (auto customer : {"customer-7", "customer-42"})
      steps.push_back(
        tasks->find("order_step")->builder().channel_args(customer).json(i));
  auto spawned = cafmq::spawn_many(conn, steps);
  if (!spawned)
    return example::fail(spawned.error());
  std::vector<cafmq::uuid> ids;
  for (auto& x : *spawned)
    ids.push_back(x.id);
  if (!example::wait_until_finished(conn, ids))
    return 1;
  std::cout << "every customer's steps ran in order" << std::endl;
  return 0;
}
