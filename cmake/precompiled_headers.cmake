# SPDX-License-Identifier: BSD-3-Clause
# Precompiled headers: every translation unit that includes CAF spends most of
# its parse time in <caf/all.hpp> (and libpqxx), so one target precompiles
# them once per build directory and every other target reuses that header.
# GCC only takes a precompiled header built with the same flags, so each build
# directory (plain, ASan, TSan) makes its own. A target whose flags or
# definitions differ (GCC then silently parses the header instead) can be
# listed in CAFMQ_PCH_SKIP. Turn it off with -DCAFMQ_PCH=OFF, e.g. to check
# that every file includes what it uses.
if(NOT CAFMQ_PCH)
  return()
endif()

# Same definitions as the targets that link cafmq::queue (PQXX_HAVE_OPTIONAL).
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/cafmq_pch.cpp" CONTENT "")
add_library(cafmq_pch OBJECT "${PROJECT_BINARY_DIR}/cafmq_pch.cpp")
target_link_libraries(cafmq_pch PRIVATE CAF::core PkgConfig::PQXX)
target_precompile_headers(cafmq_pch PRIVATE <caf/all.hpp> <pqxx/pqxx>)
# Shared libraries compile with -fPIC, which GCC's header must match.
if(CAFMQ_SHARED_LIBS)
  add_library(cafmq_pch_pic OBJECT "${PROJECT_BINARY_DIR}/cafmq_pch.cpp")
  set_target_properties(cafmq_pch_pic PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(cafmq_pch_pic PRIVATE CAF::core PkgConfig::PQXX)
  target_precompile_headers(cafmq_pch_pic PRIVATE <caf/all.hpp> <pqxx/pqxx>)
endif()

# cafmq_test_main links CAF alone (no PQXX_HAVE_OPTIONAL): GCC would not take
# the header there.
# cafmq_web compiles with httplib's definitions (OpenSSL, zlib, brotli).
set(CAFMQ_PCH_SKIP cafmq_test_main cafmq_web)

function(cafmq_collect_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    cafmq_collect_targets("${sub}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

cafmq_collect_targets("${PROJECT_SOURCE_DIR}" all_targets)
foreach(target IN LISTS all_targets)
  get_target_property(type ${target} TYPE)
  if(target MATCHES "^cafmq_pch" OR target IN_LIST CAFMQ_PCH_SKIP
     OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$")
    continue()
  endif()
  if(type STREQUAL "SHARED_LIBRARY")
    target_precompile_headers(${target} REUSE_FROM cafmq_pch_pic)
  else()
    target_precompile_headers(${target} REUSE_FROM cafmq_pch)
  endif()
endforeach()
