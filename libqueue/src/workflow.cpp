// SPDX-License-Identifier: BSD-3-Clause
#include "cafmq/workflow.hpp"

namespace cafmq {

workflow::workflow() : id_(uuid::time_ordered()) {
  // nop
}

workflow::workflow(const uuid& x) : id_(x) {
  // nop
}

uuid workflow::add(spawn_builder x, const std::vector<uuid>& parents,
                   parent_failure policy) {
  if (!x.id())
    x.id(uuid::time_ordered());
  x.workflow(id_);
  if (!parents.empty())
    x.after(parents).on_parent_failure(policy);
  auto result = *x.id();
  tasks_.push_back(std::move(x));
  return result;
}

caf::expected<std::vector<spawn_result>>
workflow::spawn(pqxx::transaction_base& tx) const {
  return spawn_many(tx, tasks_);
}

caf::expected<std::vector<spawn_result>>
workflow::spawn(pqxx::connection_base& conn) const {
  return spawn_many(conn, tasks_);
}

uuid batch::add(spawn_builder x) {
  auto result = graph_.add(std::move(x));
  members_.push_back(result);
  return result;
}

batch& batch::on_success(spawn_builder x) {
  on_success_ = std::move(x);
  return *this;
}

batch& batch::on_finish(spawn_builder x) {
  on_finish_ = std::move(x);
  return *this;
}

workflow batch::graph() const {
  auto result = graph_;
  if (on_success_)
    result.add(*on_success_, members_, parent_failure::cancel);
  if (on_finish_)
    result.add(*on_finish_, members_, parent_failure::run);
  return result;
}

caf::expected<std::vector<spawn_result>>
batch::spawn(pqxx::transaction_base& tx) const {
  return graph().spawn(tx);
}

caf::expected<std::vector<spawn_result>>
batch::spawn(pqxx::connection_base& conn) const {
  return graph().spawn(conn);
}

end_counts count_ends(const std::vector<parent_result>& xs) {
  end_counts result;
  for (const auto& x : xs) {
    if (x.state == task_state::completed)
      ++result.completed;
    else if (x.state == task_state::failed)
      ++result.failed;
    else if (x.state == task_state::cancelled)
      ++result.cancelled;
  }
  return result;
}

} // namespace cafmq
