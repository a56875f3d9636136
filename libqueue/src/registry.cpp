// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/registry.hpp"

#include "cafmq/error.hpp"
#include "sql_util.hpp"

namespace cafmq {

bool default_is_failure(const caf::error& err) {
  return code_of(err) == errc::payload_mismatch;
}

bool is_definitive_failure(const failure_filter& custom,
                           const caf::error& err) {
  return default_is_failure(err) || (custom && custom(err));
}

caf::expected<registry> registry::make(std::vector<task_definition> xs) {
  registry result;
  for (auto& x : xs)
    if (auto err = result.add(std::move(x)))
      return err;
  return result;
}

caf::error registry::add(task_definition x) {
  if (!x.handler)
    return make_error(errc::invalid_argument,
                      "task " + x.name + " has no handler");
  return insert(std::move(x));
}

caf::error registry::declare(std::string name, task_options defaults) {
  return insert({std::move(name), nullptr, std::move(defaults)});
}

caf::error registry::insert(task_definition x) {
  if (auto err = detail::check_name("task name", x.name, max_name_bytes, false))
    return err;
  if (defs_.count(x.name) > 0)
    return make_error(errc::invalid_name,
                      "task " + x.name + " is defined twice");
  auto name = x.name;
  defs_.emplace(std::move(name), std::move(x));
  return caf::none;
}

const task_definition* registry::find(const std::string& name) const {
  auto i = defs_.find(name);
  return i != defs_.end() ? &i->second : nullptr;
}

std::vector<std::string> registry::names() const {
  std::vector<std::string> result;
  for (const auto& kvp : defs_)
    result.push_back(kvp.first);
  return result;
}

} // namespace cafmq
