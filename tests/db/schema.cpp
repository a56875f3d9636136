// SPDX-License-Identifier: BSD-3-Clause
#define CAF_SUITE schema
#include <caf/test/unit_test.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/db_fixture.hpp"
#include "support/process.hpp"

using namespace cafmq;

namespace {

// The lines of `text` that are not empty: blank lines are layout only.
std::vector<std::string> content_lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t") != std::string::npos)
      result.push_back(line);
  return result;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(schema_tests, test::db_fixture)

CAF_TEST(the schema snapshot matches the migrations) {
  std::string script = CAFMQ_SCHEMA_SNAPSHOT_SCRIPT;
  std::string snapshot = CAFMQ_SCHEMA_SNAPSHOT;
  std::string actual;
  auto child
    = test::start_process("bash '" + script + "' --print '" + url + "'");
  CAF_REQUIRE(child != nullptr);
  auto status = test::finish_process(child, actual);
  if (status != 0)
    CAF_FAIL("schema-snapshot.sh --print failed: " << actual);
  auto matches = content_lines(actual) == content_lines(read_file(snapshot));
  CAF_CHECK(matches);
  if (matches)
    return;
  auto actual_path = std::string{CAFMQ_TEST_BINARY_DIR} + "/schema.actual.sql";
  std::ofstream{actual_path} << actual;
  std::string diff;
  test::finish_process(
    test::start_process("diff -u -B '" + snapshot + "' '" + actual_path + "'"),
    diff);
  CAF_FAIL(snapshot << " is not the schema that the migrations build:\n"
                    << diff
                    << "\nIf the migrations are right, regenerate the "
                       "snapshot with scripts/schema-snapshot.sh and commit "
                       "it.");
}

CAF_TEST_FIXTURE_SCOPE_END()
