# SPDX-License-Identifier: BSD-3-Clause
# The libraries cafmq builds on, as imported targets. Used by the build
# (CMakeLists.txt) and by the installed package (cafmqConfig.cmake), so a
# consumer's cafmq::queue and cafmq::actors resolve to the same targets.
# Sets CAFMQ_MISSING_DEPENDENCIES to a message when something is missing.
set(CAFMQ_MISSING_DEPENDENCIES "")
set(_cafmq_debian_hint "on Debian bookworm: apt-get install libcaf-dev "
    "libpqxx-dev libpq-dev nlohmann-json3-dev libcpp-httplib-dev prometheus-cpp-dev pkg-config")
string(CONCAT _cafmq_debian_hint ${_cafmq_debian_hint})

find_package(Threads QUIET)
find_package(nlohmann_json 3 QUIET)
find_package(PkgConfig QUIET)
if(NOT Threads_FOUND OR NOT nlohmann_json_FOUND OR NOT PkgConfig_FOUND)
  set(CAFMQ_MISSING_DEPENDENCIES
      "Threads, nlohmann_json 3 or pkg-config not found; ${_cafmq_debian_hint}")
  return()
endif()

# CAF 0.17 (Debian) ships neither a CMake package nor a .pc file.
if(NOT TARGET CAF::core)
  find_path(CAF_INCLUDE_DIR caf/all.hpp)
  find_library(CAF_CORE_LIBRARY caf_core)
  find_library(CAF_IO_LIBRARY caf_io)
  find_library(CAF_OPENSSL_LIBRARY caf_openssl)
  if(NOT CAF_INCLUDE_DIR OR NOT CAF_CORE_LIBRARY OR NOT CAF_IO_LIBRARY
     OR NOT CAF_OPENSSL_LIBRARY)
    set(CAFMQ_MISSING_DEPENDENCIES
        "CAF 0.17 (caf_core, caf_io, caf_openssl) not found; ${_cafmq_debian_hint}")
    return()
  endif()
  add_library(CAF::core INTERFACE IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${CAF_CORE_LIBRARY};Threads::Threads")
  add_library(CAF::io INTERFACE IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    INTERFACE_LINK_LIBRARIES "${CAF_IO_LIBRARY};CAF::core")
  add_library(CAF::openssl INTERFACE IMPORTED)
  set_target_properties(CAF::openssl PROPERTIES
    INTERFACE_LINK_LIBRARIES "${CAF_OPENSSL_LIBRARY};CAF::io")
endif()

# libpqxx 6.4: pkg-config only; Debian's build lacks PQXX_HAVE_OPTIONAL,
# which cafmq's headers rely on (every translation unit must agree on it).
if(NOT TARGET PkgConfig::PQXX)
  pkg_check_modules(PQXX QUIET IMPORTED_TARGET libpqxx>=6.4)
  if(NOT PQXX_FOUND)
    set(CAFMQ_MISSING_DEPENDENCIES
        "libpqxx >= 6.4 not found (pkg-config libpqxx); ${_cafmq_debian_hint}")
    return()
  endif()
  target_compile_definitions(PkgConfig::PQXX INTERFACE PQXX_HAVE_OPTIONAL=1)
endif()
# libpq itself: cafmq reads connection strings with PQconninfoParse.
if(NOT TARGET PkgConfig::PQ)
  pkg_check_modules(PQ QUIET IMPORTED_TARGET libpq)
  if(NOT PQ_FOUND)
    set(CAFMQ_MISSING_DEPENDENCIES
        "libpq not found (pkg-config libpq); ${_cafmq_debian_hint}")
    return()
  endif()
endif()
# cpp-httplib (the dashboard, cafmq::web): pkg-config only. Its compile
# definitions (OpenSSL, zlib, brotli) must match Debian's build of the
# library; cafmq uses it only inside cafmq_web.
if(NOT TARGET PkgConfig::HTTPLIB)
  pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib>=0.11)
  if(NOT HTTPLIB_FOUND)
    set(CAFMQ_MISSING_DEPENDENCIES
        "cpp-httplib >= 0.11 not found (pkg-config cpp-httplib); ${_cafmq_debian_hint}")
    return()
  endif()
endif()

# prometheus-cpp 1.0 (Debian: prometheus-cpp-dev, whose package has no
# version file): the runner's metrics endpoint (core, and pull, which serves
# HTTP). Linked privately by cafmq::actors; a static cafmq carries it into
# the consumer's link.
if(NOT TARGET prometheus-cpp::pull)
  find_package(prometheus-cpp CONFIG QUIET)
  if(NOT TARGET prometheus-cpp::pull)
    set(CAFMQ_MISSING_DEPENDENCIES
        "prometheus-cpp with pull support not found; ${_cafmq_debian_hint}")
    return()
  endif()
endif()
