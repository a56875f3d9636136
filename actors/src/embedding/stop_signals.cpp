#include "embedding/stop_signals.hpp"

#include <atomic>
#include <cerrno>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include "cafmq/error.hpp"

namespace cafmq::actors {

namespace {

// The write end of the installed instance's pipe; -1 when none.
std::atomic<int> stop_signal_fd{-1};

extern "C" void on_stop_signal(int sig) {
  auto saved = errno;
  auto fd = stop_signal_fd.load();
  if (fd >= 0) {
    auto byte = static_cast<unsigned char>(sig);
    // A full pipe already holds a signal for next(): nothing is lost.
    [[maybe_unused]] auto n = ::write(fd, &byte, 1);
  }
  errno = saved;
}

sigset_t int_and_term() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

} // namespace

caf::error stop_signals::install() {
  if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0)
    return make_error(errc::invalid_argument,
                      "cannot make a pipe for signals: errno "
                        + std::to_string(errno));
  auto expected = -1;
  if (!stop_signal_fd.compare_exchange_strong(expected, fds_[1]))
    return make_error(errc::invalid_argument,
                      "another wait_for_signal is already waiting");
  installed_ = true;
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &old_int_);
  ::sigaction(SIGTERM, &sa, &old_term_);
  auto set = int_and_term();
  pthread_sigmask(SIG_UNBLOCK, &set, &old_mask_);
  return caf::none;
}

stop_signals::~stop_signals() {
  if (installed_) {
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    stop_signal_fd = -1;
  }
  for (auto fd : fds_)
    if (fd >= 0)
      ::close(fd);
}

int stop_signals::next() {
  pollfd p{fds_[0], POLLIN, 0};
  for (;;) {
    if (::poll(&p, 1, -1) < 0 && errno != EINTR)
      return 0;
    unsigned char byte = 0;
    if (::read(fds_[0], &byte, 1) == 1)
      return byte;
  }
}

void stop_signals::wake() {
  unsigned char byte = 0;
  [[maybe_unused]] auto n = ::write(fds_[1], &byte, 1);
}

} // namespace cafmq::actors
