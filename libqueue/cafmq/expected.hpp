#pragma once

// Helpers for the `caf::expected<T>` and `caf::error` results of the public
// API, for code that wants a default or an exception instead of a branch.

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include "cafmq/error.hpp"

namespace cafmq {

/// What `value_or_throw` and `throw_if_error` throw: the error, rendered by
/// `render` as its message (e.g. "cafmq::unknown_task: no task with id ..."),
/// and kept for `code_of`.
class error_exception : public std::runtime_error {
public:
  /// Wraps `err`, which must be an error (not `caf::none`).
  explicit error_exception(caf::error err)
    : std::runtime_error(render(err)), error_(std::move(err)) {
    // nop
  }

  /// The error that was thrown.
  const caf::error& error() const noexcept {
    return error_;
  }

private:
  caf::error error_;
};

/// True when `x` holds a value.
template <class T>
bool ok(const caf::expected<T>& x) noexcept {
  return static_cast<bool>(x);
}

/// The value of `x`, or `fallback` when it holds an error.
template <class T, class U>
T value_or(const caf::expected<T>& x, U&& fallback) {
  return x ? *x : static_cast<T>(std::forward<U>(fallback));
}

/// The value of `x` moved out, or `fallback` when it holds an error.
template <class T, class U, class = std::enable_if_t<!std::is_reference_v<T>>>
T value_or(caf::expected<T>&& x, U&& fallback) {
  return x ? std::move(*x) : static_cast<T>(std::forward<U>(fallback));
}

/// The value of `x`; throws `error_exception` when it holds an error.
template <class T>
T value_or_throw(const caf::expected<T>& x) {
  if (!x)
    throw error_exception{x.error()};
  return *x;
}

/// The value of `x` moved out; throws `error_exception` when it holds an
/// error.
template <class T>
T value_or_throw(caf::expected<T>&& x) {
  if (!x)
    throw error_exception{std::move(x.error())};
  return std::move(*x);
}

/// Throws `error_exception` when `err` is an error; for the functions that
/// return a bare `caf::error`.
inline void throw_if_error(const caf::error& err) {
  if (err)
    throw error_exception{err};
}

} // namespace cafmq
