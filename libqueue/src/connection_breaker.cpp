// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/detail/connection_breaker.hpp"

#include <cerrno>
#include <system_error>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cafmq/error.hpp"

namespace cafmq {

caf::expected<std::shared_ptr<connection_breaker>>
connection_breaker::make(int socket) {
  if (socket < 0)
    return make_error(errc::invalid_argument,
                      "no socket to watch: the connection is closed");
  auto fd = ::fcntl(socket, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return make_error(errc::database_unavailable,
                      "cannot duplicate the connection's socket: "
                        + std::system_category().message(errno));
  return std::shared_ptr<connection_breaker>{new connection_breaker(fd)};
}

connection_breaker::connection_breaker(int fd) noexcept : fd_(fd) {
  // nop
}

connection_breaker::~connection_breaker() {
  release();
}

bool connection_breaker::break_now() noexcept {
  std::lock_guard<std::mutex> guard{mtx_};
  return fd_ >= 0 && ::shutdown(fd_, SHUT_RDWR) == 0;
}

void connection_breaker::release() noexcept {
  std::lock_guard<std::mutex> guard{mtx_};
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

} // namespace cafmq
