// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/web/dashboard.hpp"

#include <algorithm>
#include <csignal>
#include <iostream>

#include <pthread.h>
#include <sys/socket.h>

#include "cafmq/error.hpp"
#include "dashboard_impl.hpp"
#include "dashboard_page.hpp"

namespace cafmq::web {

namespace {

// Requests served at once. Browsers keep a few connections open and
// httplib gives each its thread while it lives; the database connections
// are bounded separately (dashboard_options::connections).
constexpr int http_threads = 16;

caf::error bad_option(std::string what) {
  return make_error(errc::invalid_argument, std::move(what));
}

// HOST:PORT, [V6]:PORT.
caf::expected<std::pair<std::string, int>>
parse_listen(const std::string& str) {
  auto colon = str.rfind(':');
  if (colon == std::string::npos || colon + 1 == str.size())
    return bad_option("dashboard listen address '" + str
                      + "' is not HOST:PORT");
  auto port_str = str.substr(colon + 1);
  if (port_str.size() > 5
      || port_str.find_first_not_of("0123456789") != std::string::npos
      || std::stoi(port_str) > 65535)
    return bad_option("dashboard listen address '" + str
                      + "' has no port from 0 to 65535");
  auto host = host_of(str);
  if (host.empty())
    return bad_option("dashboard listen address '" + str + "' has no host");
  return std::make_pair(host, std::stoi(port_str));
}

std::string html_escape(const std::string& x) {
  std::string result;
  for (auto c : x) {
    switch (c) {
      case '&':
        result += "&amp;";
        break;
      case '<':
        result += "&lt;";
        break;
      case '>':
        result += "&gt;";
        break;
      case '"':
        result += "&quot;";
        break;
      case '\'':
        result += "&#39;";
        break;
      default:
        result += c;
    }
  }
  return result;
}

} // namespace

void replace_all(std::string& text, const std::string& what,
                 const std::string& with) {
  for (auto pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + with.size()))
    text.replace(pos, what.size(), with);
}

httplib::Server::HandlerResponse
dashboard::impl::admit(const httplib::Request& req, httplib::Response& res) {
  if (secrets.open() && !is_loopback(host_of(req.get_header_value("Host")))) {
    send_json(res, 403,
              {{"error", "forbidden"},
               {"message", "this dashboard answers only to loopback host "
                           "names (it has no token or password)"}});
    return httplib::Server::HandlerResponse::Handled;
  }
  // `/?token=T` trades the token for the session cookie once, and
  // leaves it out of the address bar and history.
  if (req.path == "/" && req.has_param("token") && !secrets.token.empty()) {
    if (equal_secret(req.get_param_value("token"), secrets.token)) {
      res.set_header("Set-Cookie", std::string{gate::cookie_name} + "="
                                     + secrets.session
                                     + "; HttpOnly; SameSite=Strict; Path=/");
      res.set_redirect("/", 303);
    } else {
      res.status = 401;
      res.set_content("wrong token\n", "text/plain");
    }
    return httplib::Server::HandlerResponse::Handled;
  }
  if (credential_of(req))
    return httplib::Server::HandlerResponse::Unhandled;
  if (!secrets.user.empty())
    res.set_header("WWW-Authenticate",
                   "Basic realm=\"cafmq dashboard\", charset=\"UTF-8\"");
  auto message = secrets.token.empty()
                   ? "log in"
                   : "open /?token=TOKEN once, or send Authorization: "
                     "Bearer TOKEN";
  if (is_api(req)) {
    send_json(res, 401, {{"error", "unauthorized"}, {"message", message}});
  } else {
    res.status = 401;
    res.set_content(std::string{"401 unauthorized: "} + message + "\n",
                    "text/plain");
  }
  return httplib::Server::HandlerResponse::Handled;
}

dashboard::dashboard(std::string url, dashboard_options opts,
                     connection_options conn_opts)
  : impl_(std::make_unique<impl>()) {
  impl_->url = std::move(url);
  impl_->opts = std::move(opts);
  impl_->conn_opts = std::move(conn_opts);
}

dashboard::~dashboard() {
  stop();
}

caf::error dashboard::start() {
  auto& d = *impl_;
  std::lock_guard<std::mutex> guard{d.mtx};
  if (d.started)
    return bad_option("the dashboard is already started");
  auto addr = parse_listen(d.opts.listen);
  if (!addr)
    return std::move(addr.error());
  auto& [host, port] = *addr;
  d.secrets.token = d.opts.token;
  d.secrets.user = d.opts.user;
  d.secrets.password = d.opts.password;
  if (d.secrets.open() && !is_loopback(host))
    return bad_option(
      "the dashboard listens on " + host
      + ", which is not loopback: give it a token or a user and "
        "password");
  if (!d.opts.user.empty() && d.opts.password.empty())
    return bad_option("the dashboard's basic-auth user has no password");
  if (d.opts.connections < 1)
    return bad_option("the dashboard needs at least one database connection");
  d.page = dashboard_page;
  replace_all(d.page, "{{csrf}}", html_escape(d.secrets.csrf));
  replace_all(d.page, "{{read_only}}", d.opts.read_only ? "true" : "false");
  d.pool
    = std::make_unique<connection_pool>(d.url, d.conn_opts, d.opts.connections);
  // A database that cannot be reached fails the start, not the first page.
  auto conn = d.pool->acquire(std::chrono::seconds{1});
  if (!conn)
    return std::move(conn.error());
  d.pool->release(std::move(*conn), true);
  d.series = std::make_unique<series_ring>(
    static_cast<std::size_t>(std::max(d.opts.chart_points, 1)));
  d.routes();
  d.server.new_task_queue = [] {
    return new httplib::ThreadPool(http_threads);
  };
  d.server.set_keep_alive_timeout(2);
  d.server.set_payload_max_length(64 * 1024);
  d.server.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                                {"X-Frame-Options", "DENY"},
                                {"Referrer-Policy", "no-referrer"},
                                {"Cache-Control", "no-store"}});
  // httplib's default sets SO_REUSEPORT, with which a second process binds
  // the same port without an error; SO_REUSEADDR only skips TIME_WAIT.
  d.server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  if (port == 0) {
    auto bound = d.server.bind_to_any_port(host);
    if (bound < 0)
      return bad_option("the dashboard cannot listen on " + d.opts.listen
                        + " (not a local address?)");
    d.port = static_cast<std::uint16_t>(bound);
  } else {
    if (!d.server.bind_to_port(host, port))
      return bad_option("the dashboard cannot listen on " + d.opts.listen
                        + " (address in use, or not a local address)");
    d.port = static_cast<std::uint16_t>(port);
  }
  d.thread = std::thread{[&d] {
    d.server.listen_after_bind();
  }};
  if (d.opts.chart_interval.count() > 0) {
    d.sampling = true;
    d.sampler = std::thread{[&d] {
      std::unique_lock<std::mutex> guard{d.sample_mtx};
      while (d.sampling) {
        guard.unlock();
        d.sample();
        guard.lock();
        d.sample_cv.wait_for(guard, d.opts.chart_interval,
                             [&d] { return !d.sampling; });
      }
    }};
  }
  d.started = true;
  return caf::none;
}

void dashboard::impl::sample() {
  auto bounds = series->bounds();
  auto x = pool->with(
    [&](pqxx::connection_base& conn) { return sample_queue(conn, bounds); });
  // A failed sample leaves a gap: the next one counts from the last point.
  if (!x)
    return;
  std::optional<handler_occupancy> handlers;
  if (opts.occupancy)
    handlers = opts.occupancy();
  series->add(bounds, *x, handlers);
}

std::uint16_t dashboard::port() const {
  return impl_->port;
}

void dashboard::stop() {
  auto& d = *impl_;
  std::lock_guard<std::mutex> guard{d.mtx};
  if (!d.started)
    return;
  {
    std::lock_guard<std::mutex> sample_guard{d.sample_mtx};
    d.sampling = false;
  }
  d.sample_cv.notify_all();
  if (d.sampler.joinable())
    d.sampler.join();
  d.server.stop();
  if (d.thread.joinable())
    d.thread.join();
  d.started = false;
}

int run_dashboard(const std::string& url, const dashboard_options& opts,
                  const connection_options& conn_opts) {
  // Blocked before the server's threads exist, so they inherit the mask and
  // only sigwait below takes the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  dashboard board{url, opts, conn_opts};
  if (auto err = board.start()) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    std::cerr << "cafmq dashboard: " << render(err) << '\n';
    return 1;
  }
  auto addr = parse_listen(opts.listen);
  auto host = addr->first.find(':') == std::string::npos
                ? addr->first
                : "[" + addr->first + "]";
  std::cerr << "cafmq dashboard: serving url=http://" << host << ':'
            << board.port() << "/ read_only=" << std::boolalpha
            << opts.read_only << " auth="
            << (!opts.token.empty()  ? "token"
                : !opts.user.empty() ? "basic"
                                     : "none")
            << std::endl;
  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "cafmq dashboard: stopping signal=" << sig << std::endl;
  board.stop();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return 0;
}

} // namespace cafmq::web
