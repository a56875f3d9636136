// SPDX-License-Identifier: BSD-3-Clause
// A two-phase reservation: reserve a place in an ordered channel now, do
// other work, commit later. Until the commit, the reservation holds back the
// tasks behind it; once committed it runs first. A reservation that is never
// committed expires at its deadline and releases the chain.

#include "cafmq/current_task.hpp"
#include "cafmq/spawn.hpp"
#include "example_support.hpp"

namespace {

caf::error ship(cafmq::current_task& task) {
  std::cout << "shipping " << task.json<std::string>().value() << std::endl;
  return caf::none;
}

} // namespace

int main() {
  auto url = example::database_url();
  cafmq::task_options defaults;
  defaults.channel_name = "shipments";
  defaults.ordered = true;
  auto tasks = std::make_shared<cafmq::registry>();
  if (auto err = tasks->add({"ship", ship, defaults}))
    return example::fail(err);
  auto runner = example::start_runner(url, tasks);
  pqxx::connection conn{url};
  const auto& def = *tasks->find("ship");
  // Reserve first place; it must be committed within 30 seconds.
  auto reserved = def.builder()
                    .json(std::string{"the reserved parcel"})
                    .commit_interval(std::chrono::seconds{30})
                    .spawn(conn);
  auto behind = def.builder().json(std::string{"the next parcel"}).spawn(conn);
  if (!reserved || !behind)
    return example::fail(!reserved ? reserved.error() : behind.error());
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  std::cout << "before commit: next parcel is "
            << cafmq::to_string(cafmq::status(conn, behind->id)->state)
            << std::endl;
  auto committed = cafmq::commit(conn, {reserved->id});
  if (!committed)
    return example::fail(committed.error());
  std::cout << "committed " << committed->size() << " reservation" << std::endl;
  if (!example::wait_until_finished(conn, {reserved->id, behind->id}))
    return 1;
  // A reservation that is never committed: it expires and releases the chain.
  auto abandoned = def.builder()
                     .json(std::string{"an abandoned parcel"})
                     .commit_interval(std::chrono::seconds{1})
                     .spawn(conn);
  auto last = def.builder().json(std::string{"the last parcel"}).spawn(conn);
  if (!abandoned || !last)
    return example::fail(!abandoned ? abandoned.error() : last.error());
  if (!example::wait_until_finished(conn, {last->id}))
    return 1;
  std::cout << "the abandoned reservation expired; the last parcel shipped"
            << std::endl;
  return 0;
}
