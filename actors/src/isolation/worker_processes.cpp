// SPDX-License-Identifier: BSD-3-Clause
#include "isolation/worker_processes.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/all.hpp>

#include "cafmq/actors/detail/worker_port.hpp"
#include "cafmq/actors/isolation.hpp"
#include "cafmq/actors/worker.hpp"
#include "cafmq/error.hpp"

extern char** environ;

namespace cafmq::actors {

namespace {

// What a runner exports to its worker processes.
constexpr const char* port_var = "CAFMQ_WORKER_PROCESS";
constexpr const char* secret_var = "CAFMQ_WORKER_SECRET";
constexpr const char* name_var = "CAFMQ_WORKER_NAME";

// A process that keeps dying is started again after a backoff that doubles
// from the first to the last; one that lived `steady` starts from the first.
constexpr std::chrono::milliseconds first_backoff{100};
constexpr std::chrono::milliseconds last_backoff{10000};
constexpr std::chrono::seconds steady{30};

using processes_actor = caf::typed_actor<
  // reaper: the process of this slot started with this pid.
  caf::reacts_to<run_atom, std::int32_t, std::int64_t>,
  // reaper: the process of this slot ended with this wait status.
  caf::reacts_to<exited_atom, std::int32_t, std::int32_t>,
  // own timer: start the process of this slot again.
  caf::reacts_to<restart_atom, std::int32_t>,
  // own timer: the runtime ended the stop bound ago.
  caf::reacts_to<kill_atom>>;

struct process_slot {
  std::string name;
  std::int64_t pid = 0;
  // A reaper thread owns the process (or is about to start it).
  bool running = false;
  caf::timestamp started;
  std::chrono::milliseconds backoff{0};
  std::thread reaper;
};

struct processes_state {
  runtime_actor runtime;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::vector<process_slot> slots;
  std::unique_ptr<logger> log;
  caf::timespan stop_bound;
  bool stopping = false;
  static inline const char* name = "cafmq.worker_processes";
};

using processes_ptr = processes_actor::stateful_pointer<processes_state>;

std::vector<char*> pointers(std::vector<std::string>& xs) {
  std::vector<char*> result;
  for (auto& x : xs)
    result.push_back(x.data());
  result.push_back(nullptr);
  return result;
}

// The body of a reaper thread: starts one worker process and waits for it.
// The process gets SIGKILL when this thread ends (PR_SET_PDEATHSIG), which
// it does only once the process is gone, or when the runner dies.
void reap(processes_actor home, std::int32_t slot,
          std::vector<std::string> argv, std::vector<std::string> env) {
  // Only async-signal-safe calls between fork and exec: prepared here.
  auto args = pointers(argv);
  auto envs = pointers(env);
  auto parent = getpid();
  auto pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    execve(args[0], args.data(), envs.data());
    _exit(127);
  }
  if (pid < 0) {
    caf::anon_send(home, exited_atom::value, slot, std::int32_t{127 << 8});
    return;
  }
  caf::anon_send(home, run_atom::value, slot, std::int64_t{pid});
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ; // again
  caf::anon_send(home, exited_atom::value, slot, std::int32_t{status});
}

void launch(processes_ptr self, std::int32_t slot) {
  auto& st = self->state;
  auto& x = st.slots[static_cast<std::size_t>(slot)];
  if (x.reaper.joinable())
    x.reaper.join();
  x.running = true;
  x.pid = 0;
  auto env = st.env;
  env.push_back(std::string{name_var} + "=" + x.name);
  x.reaper = std::thread{reap, caf::actor_cast<processes_actor>(self), slot,
                         st.argv, std::move(env)};
}

void quit_if_reaped(processes_ptr self) {
  auto& st = self->state;
  if (!st.stopping)
    return;
  for (auto& x : st.slots)
    if (x.running)
      return;
  for (auto& x : st.slots)
    if (x.reaper.joinable())
      x.reaper.join();
  self->quit();
}

processes_actor::behavior_type
processes(processes_ptr self, runtime_actor runtime, runner_config cfg,
          std::vector<std::string> argv, std::vector<std::string> env) {
  auto& st = self->state;
  st.runtime = std::move(runtime);
  st.argv = std::move(argv);
  st.env = std::move(env);
  st.log = std::make_unique<logger>(cfg.log ? cfg.log : stderr_sink(),
                                    cfg.min_log_level);
  st.stop_bound = cfg.shutdown_timeout + cfg.handler_grace;
  self->monitor(st.runtime);
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source != st.runtime.address())
      return;
    st.stopping = true;
    self->delayed_send(self, st.stop_bound, kill_atom::value);
    quit_if_reaped(self);
  });
  st.slots.resize(static_cast<std::size_t>(cfg.worker_processes));
  for (std::size_t i = 0; i < st.slots.size(); ++i) {
    st.slots[i].name = cfg.node + "/worker-" + std::to_string(i + 1);
    launch(self, static_cast<std::int32_t>(i));
  }
  return {
    [=](run_atom, std::int32_t slot, std::int64_t pid) {
      auto& x = self->state.slots[static_cast<std::size_t>(slot)];
      x.pid = pid;
      x.started = caf::make_timestamp();
      (*self->state.log)(log_level::info, "worker process started",
                         {{"worker", x.name}, {"pid", pid}});
    },
    [=](exited_atom, std::int32_t slot, std::int32_t status) {
      auto& st = self->state;
      auto& x = st.slots[static_cast<std::size_t>(slot)];
      x.reaper.join();
      x.running = false;
      // The runtime fails what the process held, with this status.
      if (x.pid != 0)
        self->send(st.runtime, exited_atom::value, x.pid, status);
      auto how = describe_wait_status(status);
      if (st.stopping || status == 0) {
        (*st.log)(log_level::info, "worker process ended",
                  {{"worker", x.name}, {"pid", x.pid}, {"status", how}});
        quit_if_reaped(self);
        return;
      }
      auto lived = caf::make_timestamp() - x.started;
      if (x.pid == 0 || lived < steady)
        x.backoff = std::min(
          last_backoff, x.backoff.count() == 0 ? first_backoff : 2 * x.backoff);
      else
        x.backoff = first_backoff;
      (*st.log)(log_level::error, "worker process died, starting it again",
                {{"worker", x.name},
                 {"pid", x.pid},
                 {"status", how},
                 {"after_ms", x.backoff.count()}});
      self->delayed_send(self, x.backoff, restart_atom::value, slot);
    },
    [=](restart_atom, std::int32_t slot) {
      auto& st = self->state;
      if (!st.stopping && !st.slots[static_cast<std::size_t>(slot)].running)
        launch(self, slot);
    },
    [=](kill_atom) {
      for (auto& x : self->state.slots)
        if (x.running && x.pid > 0)
          kill(static_cast<pid_t>(x.pid), SIGKILL);
    },
  };
}

// The arguments this process was started with (/proc/self/cmdline).
std::vector<std::string> own_arguments() {
  std::ifstream in{"/proc/self/cmdline", std::ios::binary};
  std::string all{std::istreambuf_iterator<char>{in}, {}};
  std::vector<std::string> result;
  std::string::size_type pos = 0;
  while (pos < all.size()) {
    auto end = all.find('\0', pos);
    if (end == std::string::npos)
      end = all.size();
    result.push_back(all.substr(pos, end - pos));
    pos = end + 1;
  }
  return result;
}

bool is_ours(const char* entry) {
  for (auto name : {port_var, secret_var, name_var}) {
    auto n = std::char_traits<char>::length(name);
    if (std::strncmp(entry, name, n) == 0 && entry[n] == '=')
      return true;
  }
  return false;
}

} // namespace

std::shared_ptr<registry> isolated_tasks(const runner_config& cfg) {
  auto result = std::make_shared<registry>();
  for (auto& from : {cfg.tasks, cfg.remote_tasks})
    if (from)
      for (auto& name : from->names())
        if (auto def = from->find(name); def->isolated)
          result->add(*def);
  return result;
}

void split_isolated(runner_config& cfg) {
  if (!cfg.tasks)
    return;
  auto local = std::make_shared<registry>();
  auto remote = cfg.remote_tasks ? std::make_shared<registry>(*cfg.remote_tasks)
                                 : std::make_shared<registry>();
  bool moved = false;
  for (auto& name : cfg.tasks->names()) {
    auto def = cfg.tasks->find(name);
    // A name that remote_tasks defines too stays local, so that the
    // runner's check refuses it as defined twice.
    if (def->isolated && remote->find(name) == nullptr) {
      remote->add(*def);
      moved = true;
    } else {
      local->add(*def);
    }
  }
  if (!moved)
    return;
  cfg.tasks = std::move(local);
  cfg.remote_tasks = std::move(remote);
}

void start_worker_processes(caf::actor_system& sys,
                            const runtime_actor& runtime,
                            const runner_config& cfg, std::uint16_t port,
                            const std::string& secret) {
  std::vector<std::string> argv;
  if (cfg.worker_command.empty()) {
    argv = own_arguments();
    if (argv.empty())
      argv.emplace_back();
    argv[0] = "/proc/self/exe";
  } else {
    argv = cfg.worker_command;
  }
  std::vector<std::string> env;
  for (auto i = environ; *i != nullptr; ++i)
    if (!is_ours(*i))
      env.emplace_back(*i);
  env.push_back(std::string{port_var} + "=" + std::to_string(port));
  env.push_back(std::string{secret_var} + "=" + secret);
  sys.spawn(processes, runtime, cfg, std::move(argv), std::move(env));
}

bool is_worker_process() {
  return std::getenv(port_var) != nullptr;
}

void serve_worker_process(const runner_config& cfg) {
  auto port = std::getenv(port_var);
  if (port == nullptr)
    return;
  node_endpoint where;
  where.port = static_cast<std::uint16_t>(std::atoi(port));
  if (auto secret = std::getenv(secret_var))
    where.secret = secret;
  worker_config wcfg;
  if (auto name = std::getenv(name_var))
    wcfg.node = name;
  // Neither handlers nor the programs they start see these.
  for (auto name : {port_var, secret_var, name_var})
    unsetenv(name);
  wcfg.tasks = isolated_tasks(cfg);
  wcfg.capacity = cfg.worker_process_capacity;
  wcfg.request_timeout = cfg.request_timeout;
  wcfg.is_failure = cfg.is_failure;
  wcfg.pid = getpid();
  wcfg.database_url = cfg.database_url;
  wcfg.log = cfg.log;
  wcfg.min_log_level = cfg.min_log_level;
  logger log{cfg.log ? cfg.log : stderr_sink(), cfg.min_log_level};
  auto node = worker_node::start(wcfg, where);
  if (!node) {
    log(log_level::error, "worker process could not join its runner",
        {{"worker", wcfg.node}, {"error", render(node.error())}});
    std::exit(1);
  }
  auto err = (*node)->wait();
  node->reset();
  std::exit(err ? 1 : 0);
}

} // namespace cafmq::actors
