// SPDX-License-Identifier: BSD-3-Clause
// `cafmq-e2e watches`: a remote client with many watches at once. It
// connects to the node at 127.0.0.1:PORT and watches every task of DIR/ids
// (one id a line) at the same time, one watcher actor each. It prints
// "WATCHING N" once each watch got its first state, then, when every watch
// ended, "ENDED completed=C other=O errors=E" with how many ended on
// `completed`, on another final state, or with an error (the first error
// follows on its own line), and exits 0.
//
//   cafmq-e2e watches PORT SECRET DIR

#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include <caf/all.hpp>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/protocol.hpp"
#include "cafmq/error.hpp"

#include "../watch_tally.hpp"
#include "common.hpp"

namespace cafmq::e2e {

int run_watches(const arguments& args) {
  std::vector<uuid> ids;
  std::ifstream in{args[2] + "/ids"};
  for (std::string line; std::getline(in, line);)
    if (auto id = uuid::parse(line))
      ids.push_back(*id);
  caf::actor_system_config sys_cfg;
  actors::add_message_types(sys_cfg);
  actors::enable_nodes(sys_cfg);
  caf::actor_system sys{sys_cfg};
  actors::node_endpoint where;
  where.port = static_cast<std::uint16_t>(std::stoi(args[0]));
  where.secret = args[1];
  auto node = actors::connect_node(sys, where);
  if (!node)
    return fail("watches", node.error());
  auto t = std::make_shared<test::watch_tally>();
  for (auto& id : ids)
    caf::anon_send(*node, actors::watch_atom::value, id,
                   sys.spawn(test::count_watch_end, t));
  auto wait = [&](auto pred) {
    while (!pred())
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
  };
  auto n = static_cast<int>(ids.size());
  wait([&] { return t->first + t->errors >= n; });
  std::cout << "WATCHING " << t->first << std::endl;
  wait([&] { return t->ended() >= n; });
  std::cout << "ENDED completed=" << t->completed << " other=" << t->other
            << " errors=" << t->errors << std::endl;
  if (!t->errs.empty())
    std::cout << render(t->errs.front()) << std::endl;
  return 0;
}

} // namespace cafmq::e2e
