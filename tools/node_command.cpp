// SPDX-License-Identifier: BSD-3-Clause
#include "node_command.hpp"

#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmq/actors/node.hpp"
#include "cafmq/actors/node_client.hpp"
#include "cafmq/error.hpp"
#include "durations.hpp"

namespace cafmq::cli {

namespace {

using namespace cafmq::actors;

constexpr auto usage_text = R"(usage: cafmq node COMMAND [ARG] [OPTIONS]
commands:
  stats                 the runner's counters
  events                print task events until interrupted (or --for)
  pause CHANNEL         stop starting tasks of a channel name
  resume CHANNEL        start them again
  spawn NAME            spawn a task the node knows by name
  status ID             one task's state
  cancel ID             cancel a task
  watch ID              print each state change until the task ends
  stop                  stop the node gracefully
connection:
  --host=H              default 127.0.0.1
  --port=P              required
  --secret=S            shared secret (default: CAFMQ_NODE_SECRET)
  --certificate=F --key=F --cafile=F [--passphrase=S]   mutual TLS
  --timeout=D           bound of each request (default 30s; stop: 5m)
events:   --channel=C | --task=T | --workflow=W   filter;  --for=D   listen
          this long
spawn:    --json=J --bytes=S --channel=C --args=A --id=UUID --delay=D
          --retries=N --backoff=D --backoff-cap=D --ordered[=true|false]
          --priority=N
          --commit-interval=D --task-timeout=D --unique-key=K
          --after=ID[,ID...] --on-parent-failure=cancel|run --workflow=W
durations: 250ms, 30s, 5m, 2h, 1d (a plain number is seconds)
)";

int usage(const std::string& why) {
  std::cerr << "cafmq node: " << why << '\n' << usage_text;
  return 2;
}

int node_fail(const caf::error& err) {
  std::cerr << "cafmq node: " << render(err) << '\n';
  switch (code_of(err)) {
    case errc::node_unreachable:
      return 3;
    case errc::access_denied:
      return 4;
    default:
      return 1;
  }
}

// --name=value options and positional arguments.
struct arguments {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;

  std::optional<std::string> get(const std::string& key) const {
    auto i = options.find(key);
    if (i == options.end())
      return std::nullopt;
    return i->second;
  }
};

std::string fmt_time(caf::timestamp t) {
  return caf::deep_to_string(t);
}

void print_status(const uuid& id, const task_status& st) {
  std::cout << "id=" << to_string(id) << " name=" << st.name
            << " state=" << to_string(st.state) << " attempt=" << st.attempt
            << "/" << st.max_attempts << " channel=" << st.channel_name;
  if (st.node)
    std::cout << " node=" << *st.node;
  if (st.last_error)
    std::cout << " last_error=\"" << *st.last_error << '"';
  if (st.result)
    std::cout << " result=" << *st.result;
  std::cout << std::endl;
}

void print_event(const task_event& x) {
  std::cout << "at=" << fmt_time(x.at) << " event=" << to_string(x.kind)
            << " id=" << to_string(x.id) << " name=" << x.name
            << " channel=" << x.channel_name << " args=" << x.channel_args
            << " attempt=" << x.attempt << " node=" << x.node;
  if (!x.worker.empty())
    std::cout << " worker=" << x.worker;
  if (x.workflow)
    std::cout << " workflow=" << to_string(*x.workflow);
  if (x.kind == task_event::failed)
    std::cout << " retryable=" << (x.retryable ? "true" : "false");
  if (!x.error.empty())
    std::cout << " error=\"" << x.error << '"';
  std::cout << std::endl;
}

// Fills a spawn request from the options; an error names the bad option.
caf::error make_spawn(const arguments& args, spawn_request& req) {
  auto bad = [](const std::string& what) {
    return make_error(errc::invalid_argument, what);
  };
  auto duration
    = [&](const char* key, caf::optional<caf::timespan>& out) -> caf::error {
    if (auto x = args.get(key)) {
      auto d = parse_duration(*x);
      if (!d)
        return bad(std::string{"--"} + key + " is not a duration: " + *x);
      out = *d;
    }
    return caf::none;
  };
  if (auto x = args.get("json"))
    req.json = *x;
  if (auto x = args.get("bytes"))
    req.bytes = *x;
  if (auto x = args.get("channel"))
    req.channel_name = *x;
  if (auto x = args.get("args"))
    req.channel_args = *x;
  if (auto x = args.get("unique-key"))
    req.unique_key = *x;
  if (auto x = args.get("id")) {
    auto id = uuid::parse(*x);
    if (!id)
      return bad("--id is not a task id: " + *x);
    req.id = *id;
  }
  if (auto x = args.get("retries")) {
    try {
      req.retries = std::stoi(*x);
    } catch (...) {
      return bad("--retries is not a number: " + *x);
    }
  }
  if (auto x = args.get("priority")) {
    try {
      req.priority = std::stoi(*x);
    } catch (...) {
      return bad("--priority is not a number: " + *x);
    }
  }
  if (auto x = args.get("ordered")) {
    if (*x != "true" && *x != "false")
      return bad("--ordered takes true or false, got " + *x);
    req.ordered = *x == "true";
  }
  if (auto x = args.get("after")) {
    std::string rest = *x;
    for (size_t at = 0; at <= rest.size();) {
      auto comma = std::min(rest.find(',', at), rest.size());
      auto id = uuid::parse(rest.substr(at, comma - at));
      if (!id)
        return bad("--after takes task ids separated by commas, got " + *x);
      req.parents.push_back(*id);
      at = comma + 1;
    }
  }
  if (auto x = args.get("on-parent-failure"))
    req.on_parent_failure = *x; // The runtime checks it.
  if (auto x = args.get("workflow")) {
    auto id = uuid::parse(*x);
    if (!id)
      return bad("--workflow is not a workflow id: " + *x);
    req.workflow = *id;
  }
  for (auto [key, out] :
       {std::pair{"delay", &req.delay}, std::pair{"backoff", &req.backoff},
        std::pair{"backoff-cap", &req.backoff_cap},
        std::pair{"commit-interval", &req.commit_interval},
        std::pair{"task-timeout", &req.timeout}})
    if (auto err = duration(key, *out))
      return err;
  return caf::none;
}

const std::map<std::string, int> arity = {
  {"stats", 0},  {"events", 0}, {"pause", 1}, {"resume", 1}, {"spawn", 1},
  {"status", 1}, {"cancel", 1}, {"watch", 1}, {"stop", 0},
};

const std::vector<std::string> known_options = {
  "host",         "port",       "secret",
  "certificate",  "key",        "cafile",
  "passphrase",   "timeout",    "channel",
  "task",         "for",        "json",
  "bytes",        "args",       "id",
  "delay",        "retries",    "backoff",
  "backoff-cap",  "ordered",    "commit-interval",
  "task-timeout", "unique-key", "priority",
};

int run(caf::actor_system& sys, const node_actor& node, const arguments& args,
        caf::timespan timeout) {
  const auto& cmd = args.positional[0];
  std::optional<uuid> id;
  if (cmd == "status" || cmd == "cancel" || cmd == "watch") {
    id = uuid::parse(args.positional[1]);
    if (!id)
      return usage("not a task id: " + args.positional[1]);
  }
  if (cmd == "stats") {
    auto x = ask_node<runner_stats>(sys, node, timeout, stats_atom::value);
    if (!x)
      return node_fail(x.error());
    std::cout << "running=" << x->running << " channels=" << x->channels
              << " claimed=" << x->claimed << " completed=" << x->completed
              << " failed=" << x->failed << " released=" << x->released
              << " claims=" << x->claims << " lost=" << x->lost
              << " restarts=" << x->restarts << std::endl;
    return 0;
  }
  if (cmd == "pause" || cmd == "resume") {
    auto x = cmd == "pause"
               ? ask_node<bool>(sys, node, timeout, pause_atom::value,
                                args.positional[1])
               : ask_node<bool>(sys, node, timeout, resume_atom::value,
                                args.positional[1]);
    if (!x)
      return node_fail(x.error());
    std::cout << "channel=" << args.positional[1] << " "
              << (cmd == "pause" ? "paused" : "resumed") << std::endl;
    return 0;
  }
  if (cmd == "spawn") {
    spawn_request req;
    req.name = args.positional[1];
    if (auto err = make_spawn(args, req))
      return usage(render(err));
    auto x = ask_node<spawn_reply>(sys, node, timeout, spawn_atom::value, req);
    if (!x)
      return node_fail(x.error());
    std::cout << "id=" << to_string(x->id)
              << " created=" << (x->created ? "true" : "false") << std::endl;
    return 0;
  }
  if (cmd == "status") {
    auto x = ask_node<task_status>(sys, node, timeout, status_atom::value, *id);
    if (!x)
      return node_fail(x.error());
    print_status(*id, *x);
    return 0;
  }
  if (cmd == "cancel") {
    auto x = ask_node<std::string>(sys, node, timeout, cancel_atom::value, *id);
    if (!x)
      return node_fail(x.error());
    std::cout << "id=" << to_string(*id) << " cancel=" << *x << std::endl;
    return 0;
  }
  if (cmd == "watch") {
    auto limit = caf::timespan{std::chrono::hours{24 * 365}};
    if (auto x = args.get("for"))
      limit = *parse_duration(*x);
    auto err = watch_on_node(
      sys, node, *id, [&](const task_status& x) { print_status(*id, x); },
      limit);
    return err ? node_fail(err) : 0;
  }
  if (cmd == "events") {
    event_filter filter;
    if (auto x = args.get("channel"))
      filter = {event_filter::channel_name, *x};
    else if (auto y = args.get("task"))
      filter = {event_filter::task_name, *y};
    else if (auto z = args.get("workflow")) {
      auto id = uuid::parse(*z);
      if (!id)
        return usage("--workflow is not a workflow id: " + *z);
      filter = {event_filter::workflow, to_string(*id)};
    }
    auto limit = caf::timespan{std::chrono::hours{24 * 365}};
    if (auto x = args.get("for"))
      limit = *parse_duration(*x);
    auto err = subscribe_on_node(
      sys, node, filter,
      [](const std::vector<task_event>& xs) {
        for (auto& x : xs)
          print_event(x);
        return true;
      },
      limit, [] { std::cerr << "subscribed" << std::endl; });
    return err ? node_fail(err) : 0;
  }
  // stop
  auto x = ask_node<bool>(sys, node, timeout, stop_atom::value);
  if (!x)
    return node_fail(x.error());
  std::cout << "stopped=" << (*x ? "true" : "false") << std::endl;
  return *x ? 0 : 1;
}

} // namespace

int node_command(int argc, char** argv) {
  arguments args;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage_text;
      return 0;
    }
    if (arg.rfind("--", 0) != 0) {
      args.positional.push_back(arg);
      continue;
    }
    auto eq = arg.find('=');
    auto key = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
    if (std::find(known_options.begin(), known_options.end(), key)
        == known_options.end())
      return usage("unknown option --" + key);
    if (eq == std::string::npos) {
      if (key != "ordered")
        return usage("--" + key + " needs a value (--" + key + "=...)");
      args.options[key] = "true";
    } else {
      args.options[key] = arg.substr(eq + 1);
    }
  }
  if (args.positional.empty())
    return usage("no command");
  auto cmd = args.positional[0];
  auto n = arity.find(cmd);
  if (n == arity.end())
    return usage("unknown command " + cmd);
  if (static_cast<int>(args.positional.size()) != n->second + 1)
    return usage(cmd + " takes " + std::to_string(n->second) + " argument"
                 + (n->second == 1 ? "" : "s"));
  node_endpoint where;
  if (auto x = args.get("host"))
    where.host = *x;
  auto port = args.get("port");
  if (!port)
    return usage("--port is required");
  try {
    auto p = std::stoi(*port);
    if (p < 1 || p > 65535)
      throw std::out_of_range("port");
    where.port = static_cast<std::uint16_t>(p);
  } catch (...) {
    return usage("--port must be 1..65535, got " + *port);
  }
  if (auto x = args.get("secret"))
    where.secret = *x;
  else if (auto env = std::getenv("CAFMQ_NODE_SECRET"))
    where.secret = env;
  tls_options tls;
  tls.certificate = args.get("certificate").value_or("");
  tls.key = args.get("key").value_or("");
  tls.cafile = args.get("cafile").value_or("");
  tls.passphrase = args.get("passphrase").value_or("");
  where.tls = tls.enabled();
  caf::timespan timeout = cmd == "stop"
                            ? caf::timespan{std::chrono::minutes{5}}
                            : caf::timespan{std::chrono::seconds{30}};
  for (auto key : {"timeout", "for"})
    if (auto x = args.get(key))
      if (!parse_duration(*x))
        return usage(std::string{"--"} + key + " is not a duration: " + *x);
  if (auto x = args.get("timeout"))
    timeout = *parse_duration(*x);
  caf::actor_system_config cfg;
  add_message_types(cfg);
  enable_nodes(cfg, tls);
  // The CLI makes a handful of calls: few threads, no log file.
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  auto node = connect_node(sys, where, timeout);
  if (!node)
    return node_fail(node.error());
  return run(sys, *node, args, timeout);
}

} // namespace cafmq::cli
