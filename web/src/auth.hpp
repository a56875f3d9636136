// SPDX-License-Identifier: BSD-3-Clause
#pragma once

// Who may use the dashboard, and which requests may change anything. Pure
// functions of the request's headers, so the unit tests reach all of it;
// dashboard.cpp applies them to every request.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace cafmq::web {

/// Returns `n` random bytes from OpenSSL's generator, hex-encoded.
std::string random_hex(std::size_t n);

/// Compares two secrets in time that depends on their lengths only.
bool equal_secret(std::string_view x, std::string_view y);

/// The user and password of an `Authorization: Basic ...` header.
std::optional<std::pair<std::string, std::string>>
parse_basic(std::string_view header);

/// The value of cookie `name` in a `Cookie` header.
std::optional<std::string> cookie_value(std::string_view header,
                                        std::string_view name);

/// The host part of "host:port", "[v6]:port" or "host".
std::string host_of(std::string_view authority);

/// True for localhost, 127.0.0.0/8 and ::1 (host without port).
bool is_loopback(std::string_view host);

/// How a request proved who it is.
enum class credential {
  /// No authentication is configured (loopback only).
  open,
  /// `Authorization: Bearer` with the token.
  bearer,
  /// The session cookie that `?token=` set.
  cookie,
  /// `Authorization: Basic` with the user and password.
  basic,
};

/// The dashboard's secrets: the configured ones and those made per process.
struct gate {
  /// The configured token; empty: none.
  std::string token;
  /// The configured basic-auth user; empty: none.
  std::string user;
  /// The configured basic-auth password.
  std::string password;
  /// The session cookie's value, fresh per process.
  std::string session = random_hex(32);
  /// The CSRF token the page carries, fresh per process.
  std::string csrf = random_hex(32);

  /// The session cookie's name.
  static constexpr const char* cookie_name = "cafmq_dashboard";

  /// True when neither a token nor a user is configured.
  bool open() const {
    return token.empty() && user.empty();
  }

  /// How the request authenticates with these headers, if it does.
  std::optional<credential> authenticate(std::string_view authorization,
                                         std::string_view cookie) const;

  /// Whether a POST may act: a Bearer request needs no CSRF token (browsers
  /// never add that header by themselves); others need `csrf_header` equal
  /// to `csrf`. Any request with an Origin must come from `host` (the Host
  /// header) and, when `Sec-Fetch-Site` is present, from the same origin.
  /// Returns why not, or an empty string.
  std::string check_action(credential how, std::string_view csrf_header,
                           std::string_view origin, std::string_view host,
                           std::string_view fetch_site) const;
};

} // namespace cafmq::web
