// SPDX-License-Identifier: BSD-3-Clause
#include <exception>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include "cafmq/actors/detail/metrics.hpp"
#include "cafmq/error.hpp"

namespace cafmq::actors {

caf::expected<std::string> metrics_bind_address(const std::string& listen) {
  auto invalid = [&] {
    return make_error(errc::invalid_argument,
                      "metrics address must be PORT, :PORT or HOST:PORT, got \""
                        + listen + "\"");
  };
  auto colon = listen.rfind(':');
  std::string host
    = colon == std::string::npos ? std::string{} : listen.substr(0, colon);
  auto port = colon == std::string::npos ? listen : listen.substr(colon + 1);
  if (port.empty() || port.size() > 5
      || port.find_first_not_of("0123456789") != std::string::npos
      || std::stoi(port) > 65535)
    return invalid();
  // A bracketless IPv6 address has more colons than its port's.
  if (host.find(':') != std::string::npos && host.front() != '[')
    return invalid();
  if (host.empty() || host == "localhost")
    host = "127.0.0.1";
  return host + ":" + port;
}

struct metrics_endpoint::impl {
  // Destroyed after the server, which stops collecting first.
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables;
  std::string host;
  std::unique_ptr<prometheus::Exposer> server;
};

metrics_endpoint::metrics_endpoint(std::unique_ptr<impl> ptr)
  : impl_(std::move(ptr)) {
  // nop
}

metrics_endpoint::~metrics_endpoint() {
  // nop
}

caf::expected<std::unique_ptr<metrics_endpoint>>
metrics_endpoint::start(const std::string& listen) {
  auto address = metrics_bind_address(listen);
  if (!address)
    return std::move(address.error());
  auto ptr = std::make_unique<impl>();
  ptr->host = address->substr(0, address->rfind(':'));
  try {
    ptr->server = std::make_unique<prometheus::Exposer>(*address, 2);
  } catch (const std::exception& e) {
    return make_error(errc::invalid_argument,
                      "cannot serve metrics on " + *address + ": " + e.what());
  }
  return std::unique_ptr<metrics_endpoint>{
    new metrics_endpoint(std::move(ptr))};
}

std::uint16_t metrics_endpoint::port() const {
  auto ports = impl_->server->GetListeningPorts();
  return ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

std::string metrics_endpoint::address() const {
  return impl_->host + ":" + std::to_string(port());
}

void metrics_endpoint::add(std::shared_ptr<prometheus::Collectable> x) {
  impl_->server->RegisterCollectable(x);
  impl_->collectables.push_back(std::move(x));
}

} // namespace cafmq::actors
