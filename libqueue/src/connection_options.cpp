// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/connection_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <libpq-fe.h>
#include <pqxx/pqxx>

#include "cafmq/detail/hex.hpp"
#include "cafmq/error.hpp"
#include "sql_util.hpp"

namespace cafmq {

namespace {

using param_list = std::vector<std::pair<std::string, std::string>>;

// A connection to open: libpq's connection string, and the server settings
// to SET once connected when they do not travel in the string.
struct connection_plan {
  std::string conninfo;
  param_list session;
};

struct conninfo_deleter {
  void operator()(PQconninfoOption* xs) const noexcept {
    PQconninfoFree(xs);
  }
};

using conninfo_ptr = std::unique_ptr<PQconninfoOption, conninfo_deleter>;

// libpq and the server read every setting as an int.
caf::error check_range(const char* name, long long count, const char* unit) {
  if (count >= 0 && count <= std::numeric_limits<int>::max())
    return caf::none;
  return make_error(errc::invalid_argument,
                    std::string{name} + " must be between 0 and "
                      + std::to_string(std::numeric_limits<int>::max()) + unit
                      + ", got " + std::to_string(count) + unit);
}

caf::error validate(const connection_options& x) {
  auto optional_ms = [](const std::optional<std::chrono::milliseconds>& y) {
    return y ? y->count() : 0;
  };
  caf::error err;
  auto check = [&](const char* name, long long count, const char* unit) {
    if (!err)
      err = check_range(name, count, unit);
  };
  check("statement_timeout", optional_ms(x.statement_timeout), " ms");
  check("idle_in_transaction_session_timeout",
        optional_ms(x.idle_in_transaction_session_timeout), " ms");
  check("keepalives_idle", x.keepalives_idle.count(), " s");
  check("keepalives_interval", x.keepalives_interval.count(), " s");
  check("keepalives_count", x.keepalives_count, "");
  check("tcp_user_timeout", x.tcp_user_timeout.count(), " ms");
  check("connect_timeout", x.connect_timeout.count(), " s");
  if (!err && x.application_name.find('\0') != std::string::npos)
    err = make_error(errc::invalid_argument,
                     "application_name must not contain a NUL byte");
  return err;
}

caf::expected<conninfo_ptr> parse(const std::string& url) {
  char* msg = nullptr;
  conninfo_ptr result{PQconninfoParse(url.c_str(), &msg)};
  if (result)
    return result;
  std::string what = msg != nullptr ? msg : "out of memory";
  PQfreemem(msg);
  while (!what.empty() && std::isspace(static_cast<unsigned char>(what.back())))
    what.pop_back();
  return make_error(errc::invalid_argument, "malformed database URL: " + what);
}

// What the user set for `key`: in the URL, else in libpq's environment
// variable for it; null if neither.
const char* user_value(const PQconninfoOption* xs, const char* key) {
  for (auto x = xs; x->keyword != nullptr; ++x)
    if (std::strcmp(x->keyword, key) == 0) {
      if (x->val != nullptr)
        return x->val;
      return x->envvar != nullptr ? std::getenv(x->envvar) : nullptr;
    }
  return nullptr;
}

// Whether the server options `opts` set `name` (as `-c name=`, `-cname=` or
// `--name=`), read as the server reads them: words split at white space, a
// backslash escapes the next character, `-` in a name means `_`, and case
// does not matter.
bool sets(const std::string& opts, const std::string& name) {
  std::vector<std::string> words{std::string{}};
  for (size_t i = 0; i < opts.size(); ++i) {
    auto ch = opts[i];
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (!words.back().empty())
        words.emplace_back();
    } else {
      if (ch == '\\' && i + 1 < opts.size())
        ch = opts[++i];
      words.back() += ch;
    }
  }
  for (size_t i = 0; i < words.size(); ++i) {
    std::string setting;
    if (words[i] == "-c" && i + 1 < words.size())
      setting = words[++i];
    else if (words[i].rfind("-c", 0) == 0 || words[i].rfind("--", 0) == 0)
      setting = words[i].substr(2);
    else
      continue;
    setting.erase(std::min(setting.find('='), setting.size()));
    for (auto& ch : setting)
      ch = ch == '-' ? '_' : std::tolower(static_cast<unsigned char>(ch));
    if (setting == name)
      return true;
  }
  return false;
}

bool is_uri(const std::string& url) {
  return url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0;
}

std::string percent_encode(const std::string& x) {
  std::string result;
  for (unsigned char ch : x) {
    if (std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      result += static_cast<char>(ch);
    } else {
      result += '%';
      detail::append_hex(result, ch, true);
    }
  }
  return result;
}

// Appends `key='value'` in libpq's key=value syntax.
void append_quoted(std::string& out, const std::string& key,
                   const std::string& value) {
  if (!out.empty())
    out += ' ';
  out += key;
  out += "='";
  for (auto ch : value) {
    if (ch == '\'' || ch == '\\')
      out += '\\';
    out += ch;
  }
  out += '\'';
}

// A URI keeps its text and gets `params` in its query: a later parameter
// wins in libpq. A key=value string is written anew from its parsed form,
// since only a full parse tells where its last value ends.
std::string extend(const std::string& url, const PQconninfoOption* parsed,
                   const param_list& params) {
  if (params.empty())
    return url;
  if (is_uri(url)) {
    auto result = url;
    auto sep = url.find('?') == std::string::npos ? "?" : "&";
    if (result.back() == '?' || result.back() == '&')
      sep = "";
    for (auto& [key, value] : params) {
      result += sep;
      result += key;
      result += '=';
      result += percent_encode(value);
      sep = "&";
    }
    return result;
  }
  std::string result;
  for (auto x = parsed; x->keyword != nullptr; ++x) {
    auto replaced = [&](const auto& param) {
      return param.first == x->keyword;
    };
    if (x->val != nullptr
        && std::none_of(params.begin(), params.end(), replaced))
      append_quoted(result, x->keyword, x->val);
  }
  for (auto& [key, value] : params)
    append_quoted(result, key, value);
  return result;
}

caf::expected<connection_plan> plan(const std::string& url,
                                    const connection_options& opts) {
  if (auto err = validate(opts))
    return err;
  auto parsed = parse(url);
  if (!parsed)
    return std::move(parsed.error());
  auto xs = parsed->get();
  param_list params;
  auto add = [&](const char* key, long long count) {
    if (count > 0 && user_value(xs, key) == nullptr)
      params.emplace_back(key, std::to_string(count));
  };
  auto keepalives = opts.keepalives;
  if (auto user = user_value(xs, "keepalives"))
    keepalives = std::atoi(user) != 0;
  else
    params.emplace_back("keepalives", keepalives ? "1" : "0");
  if (keepalives) {
    add("keepalives_idle", opts.keepalives_idle.count());
    add("keepalives_interval", opts.keepalives_interval.count());
    add("keepalives_count", opts.keepalives_count);
  }
  add("tcp_user_timeout", opts.tcp_user_timeout.count());
  add("connect_timeout", opts.connect_timeout.count());
  if (!opts.application_name.empty()
      && user_value(xs, "application_name") == nullptr)
    params.emplace_back("application_name", opts.application_name);
  connection_plan result;
  auto user_opts = user_value(xs, "options");
  std::string server_opts = user_opts != nullptr ? user_opts : "";
  auto session = {
    std::make_pair("statement_timeout", opts.statement_timeout),
    std::make_pair("idle_in_transaction_session_timeout",
                   opts.idle_in_transaction_session_timeout),
  };
  for (auto& [name, value] : session)
    if (value && !sets(server_opts, name))
      result.session.emplace_back(name, std::to_string(value->count()));
  if (opts.send_session_settings && !result.session.empty()) {
    // Ours first: the server takes the last value, so the user's options
    // win even in a form that `sets` does not know.
    std::string merged;
    for (auto& [name, value] : result.session)
      merged += "-c " + name + "=" + value + " ";
    merged += server_opts;
    while (merged.back() == ' ')
      merged.pop_back();
    params.emplace_back("options", std::move(merged));
    result.session.clear();
  }
  result.conninfo = extend(url, xs, params);
  return result;
}

} // namespace

caf::expected<std::string> connection_string(const std::string& url,
                                             const connection_options& opts) {
  auto result = plan(url, opts);
  if (!result)
    return std::move(result.error());
  return std::move(result->conninfo);
}

namespace {

// The URLs whose servers refused the startup parameter `options`.
struct refusals {
  std::mutex mtx;
  std::set<std::string> urls;
};

refusals& refused_urls() {
  static refusals instance;
  return instance;
}

bool refuses_options(const std::string& url) {
  auto& xs = refused_urls();
  std::lock_guard<std::mutex> guard{xs.mtx};
  return xs.urls.count(url) > 0;
}

// What PgBouncer answers to a startup packet with `options`.
bool options_refusal(const pqxx::broken_connection& e) {
  return std::strstr(e.what(), "unsupported startup parameter: options")
         != nullptr;
}

// The connections that prepare statements, and the statements each has
// registered with libpqxx.
struct preparing_registry {
  struct entry {
    // The prepared_statements that name the connection.
    int guards = 0;
    std::vector<const char*> names;
  };
  std::mutex mtx;
  std::unordered_map<const pqxx::connection_base*, entry> connections;
};

preparing_registry& preparing_connections() {
  static preparing_registry instance;
  return instance;
}

} // namespace

bool detail::prepare_once(pqxx::connection_base& conn, const statement& s) {
  auto& xs = preparing_connections();
  std::lock_guard<std::mutex> guard{xs.mtx};
  auto i = xs.connections.find(&conn);
  if (i == xs.connections.end())
    return false;
  auto& names = i->second.names;
  if (std::find(names.begin(), names.end(), s.name) == names.end()) {
    conn.prepare(s.name, s.text);
    names.push_back(s.name);
  }
  return true;
}

prepared_statements::prepared_statements(pqxx::connection_base& conn)
  : conn_(&conn) {
  auto& xs = preparing_connections();
  std::lock_guard<std::mutex> guard{xs.mtx};
  ++xs.connections[conn_].guards;
}

prepared_statements::~prepared_statements() {
  // Out of the registry before the connection's address can be reused.
  auto& xs = preparing_connections();
  std::lock_guard<std::mutex> guard{xs.mtx};
  auto i = xs.connections.find(conn_);
  if (i != xs.connections.end() && --i->second.guards == 0)
    xs.connections.erase(i);
}

std::shared_ptr<pqxx::connection>
detail::preparing(std::unique_ptr<pqxx::connection> conn) {
  // The registration ends first, the connection after it.
  struct holder {
    explicit holder(std::unique_ptr<pqxx::connection> c)
      : conn(std::move(c)), prepared(*conn) {}
    std::unique_ptr<pqxx::connection> conn;
    prepared_statements prepared;
  };
  auto x = std::make_shared<holder>(std::move(conn));
  return {x, x->conn.get()};
}

caf::expected<std::shared_ptr<pqxx::connection_base>>
open_connection(const std::string& url, const connection_options& opts) {
  // Without the two timeouts there is no `options` to send.
  auto without_options = opts;
  without_options.statement_timeout = std::nullopt;
  without_options.idle_in_transaction_session_timeout = std::nullopt;
  auto how = plan(url, refuses_options(url) ? without_options : opts);
  if (!how)
    return std::move(how.error());
  using result_type = caf::expected<std::shared_ptr<pqxx::connection_base>>;
  return guarded([&]() -> result_type {
    std::shared_ptr<pqxx::connection> conn;
    try {
      if (opts.prepare_statements && opts.send_session_settings
          && !refuses_options(url))
        conn = detail::preparing(
          std::make_unique<pqxx::connection>(how->conninfo));
      else
        conn = std::make_shared<pqxx::connection>(how->conninfo);
    } catch (const pqxx::broken_connection& e) {
      // Only ours can be dropped: `options` of the URL or PGOPTIONS stay.
      auto plain = plan(url, without_options);
      if (!options_refusal(e) || !plain || plain->conninfo == how->conninfo)
        throw;
      {
        auto& xs = refused_urls();
        std::lock_guard<std::mutex> guard{xs.mtx};
        xs.urls.insert(url);
      }
      how = std::move(plain);
      conn = std::make_shared<pqxx::connection>(how->conninfo);
    }
    // libpqxx sets them again when it reopens the connection.
    for (auto& [name, value] : how->session)
      conn->set_variable(name, value);
    return std::shared_ptr<pqxx::connection_base>{std::move(conn)};
  });
}

bool startup_options_refused(const std::string& url) {
  return refuses_options(url);
}

} // namespace cafmq
