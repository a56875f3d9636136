# SPDX-License-Identifier: BSD-3-Clause
# Generates a C++ header that embeds the SQL files of sql/ at build time.
# Inputs: SQL_DIR, OUTPUT. Migrations become cafmq::sql::migrations (ordered by
# their number), each with the SHA-256 of its file (what `sha256sum` prints),
# which schema_version records; each file of queries/ becomes a constant named
# after it.
file(GLOB migration_files "${SQL_DIR}/migrations/*.sql")
list(SORT migration_files)
file(GLOB query_files "${SQL_DIR}/queries/*.sql")
list(SORT query_files)

set(out "// Generated from sql/ by cmake/embed_sql.cmake. Do not edit.\n")
string(APPEND out "#pragma once\n\n#include <cstddef>\n\n")
string(APPEND out "namespace cafmq::sql {\n\n")
string(APPEND out "struct migration {\n  int version;\n  const char* name;\n")
string(APPEND out "  const char* text;\n  const char* checksum;\n};\n\n")

set(entries "")
set(count 0)
foreach(path IN LISTS migration_files)
  get_filename_component(base "${path}" NAME_WE)
  if(NOT base MATCHES "^([0-9]+)_(.+)$")
    message(FATAL_ERROR "migration file name must be NNNN_name.sql: ${path}")
  endif()
  math(EXPR version "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
  file(READ "${path}" text)
  file(SHA256 "${path}" checksum)
  string(APPEND entries "  {${version}, \"${name}\", R\"cafmq_sql(${text})cafmq_sql\",\n")
  string(APPEND entries "   \"${checksum}\"},\n")
  math(EXPR count "${count} + 1")
endforeach()
string(APPEND out "inline constexpr migration migrations[] = {\n${entries}};\n\n")
string(APPEND out "inline constexpr std::size_t migration_count = ${count};\n\n")

foreach(path IN LISTS query_files)
  get_filename_component(base "${path}" NAME_WE)
  file(READ "${path}" text)
  string(APPEND out "inline constexpr const char* ${base} = R\"cafmq_sql(${text})cafmq_sql\";\n\n")
endforeach()
string(APPEND out "} // namespace cafmq::sql\n")

include("${CMAKE_CURRENT_LIST_DIR}/write_if_changed.cmake")
cafmq_write_if_changed("${OUTPUT}" "${out}")
