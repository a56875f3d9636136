// SPDX-License-Identifier: BSD-3-Clause
#include "auth.hpp"

#include <cctype>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "cafmq/detail/hex.hpp"

namespace cafmq::web {

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

std::optional<std::string> base64_decode(std::string_view in) {
  while (!in.empty() && in.back() == '=')
    in.remove_suffix(1);
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (auto c : in) {
    auto v = base64_value(c);
    if (v < 0)
      return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

std::string_view trim(std::string_view x) {
  while (!x.empty() && (x.front() == ' ' || x.front() == '\t'))
    x.remove_prefix(1);
  while (!x.empty() && (x.back() == ' ' || x.back() == '\t'))
    x.remove_suffix(1);
  return x;
}

// "Bearer abc" -> "abc" for scheme "bearer" (schemes are case-insensitive).
std::optional<std::string_view> credentials_of(std::string_view header,
                                               std::string_view scheme) {
  header = trim(header);
  if (header.size() <= scheme.size() || header[scheme.size()] != ' ')
    return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i])
      return std::nullopt;
  return trim(header.substr(scheme.size() + 1));
}

} // namespace

std::string random_hex(std::size_t n) {
  std::string bytes(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()),
                 static_cast<int>(n))
      != 1)
    throw std::runtime_error("OpenSSL's random generator failed");
  return detail::to_hex(bytes.data(), bytes.size());
}

bool equal_secret(std::string_view x, std::string_view y) {
  return x.size() == y.size()
         && CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

std::optional<std::pair<std::string, std::string>>
parse_basic(std::string_view header) {
  auto encoded = credentials_of(header, "basic");
  if (!encoded)
    return std::nullopt;
  auto decoded = base64_decode(*encoded);
  if (!decoded)
    return std::nullopt;
  auto colon = decoded->find(':');
  if (colon == std::string::npos)
    return std::nullopt;
  return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
}

std::optional<std::string> cookie_value(std::string_view header,
                                        std::string_view name) {
  while (!header.empty()) {
    auto end = header.find(';');
    auto pair = trim(header.substr(0, end));
    auto eq = pair.find('=');
    if (eq != std::string_view::npos && trim(pair.substr(0, eq)) == name)
      return std::string{trim(pair.substr(eq + 1))};
    if (end == std::string_view::npos)
      break;
    header.remove_prefix(end + 1);
  }
  return std::nullopt;
}

std::string host_of(std::string_view authority) {
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    return std::string{authority.substr(
      1, close == std::string_view::npos ? std::string_view::npos : close - 1)};
  }
  auto colon = authority.find(':');
  // Two colons: a bare IPv6 address without a port.
  if (colon != std::string_view::npos
      && authority.find(':', colon + 1) != std::string_view::npos)
    return std::string{authority};
  return std::string{authority.substr(0, colon)};
}

bool is_loopback(std::string_view host) {
  std::string lower;
  for (auto c : host)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost")
    return true;
  // Address literals only: a name such as 127.0.0.1.example.com may
  // resolve anywhere.
  in_addr v4{};
  if (inet_pton(AF_INET, lower.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, lower.c_str(), &v6) == 1
         && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::optional<credential> gate::authenticate(std::string_view authorization,
                                             std::string_view cookie) const {
  if (open())
    return credential::open;
  if (!token.empty()) {
    if (auto bearer = credentials_of(authorization, "bearer");
        bearer && equal_secret(*bearer, token))
      return credential::bearer;
    if (auto value = cookie_value(cookie, cookie_name);
        value && equal_secret(*value, session))
      return credential::cookie;
  }
  if (!user.empty())
    if (auto basic = parse_basic(authorization);
        basic && equal_secret(basic->first, user)
        && equal_secret(basic->second, password))
      return credential::basic;
  return std::nullopt;
}

std::string gate::check_action(credential how, std::string_view csrf_header,
                               std::string_view origin, std::string_view host,
                               std::string_view fetch_site) const {
  if (!origin.empty()) {
    auto scheme = origin.find("://");
    if (scheme == std::string_view::npos || origin.substr(scheme + 3) != host)
      return "the request comes from another origin";
  }
  if (!fetch_site.empty() && fetch_site != "same-origin"
      && fetch_site != "none")
    return "the request comes from another site";
  if (how != credential::bearer && !equal_secret(csrf_header, csrf))
    return "the X-CSRF-Token header is missing or wrong (reload the page)";
  return {};
}

} // namespace cafmq::web
