# SPDX-License-Identifier: BSD-3-Clause
# Generates a C++ header with one file's text as a string constant.
# Inputs: INPUT, OUTPUT, NAME (the constant, in namespace NAMESPACE).
file(READ "${INPUT}" text)
set(out "// Generated from ${INPUT} by cmake/embed_file.cmake. Do not edit.\n")
string(APPEND out "#pragma once\n\nnamespace ${NAMESPACE} {\n\n")
string(APPEND out "inline constexpr const char* ${NAME} = R\"cafmq_embed(${text})cafmq_embed\";\n\n")
string(APPEND out "} // namespace ${NAMESPACE}\n")
include("${CMAKE_CURRENT_LIST_DIR}/write_if_changed.cmake")
cafmq_write_if_changed("${OUTPUT}" "${out}")
