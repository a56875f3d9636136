# SPDX-License-Identifier: BSD-3-Clause
# Install rules, the CMake package (find_package(cafmq CONFIG)), pkg-config
# files and the Debian package (cpack -G DEB in the build directory).
include(CMakePackageConfigHelpers)

set(CAFMQ_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/cafmq")
set(CAFMQ_INSTALL_DATADIR "${CMAKE_INSTALL_DATADIR}/cafmq")
set(CAFMQ_INSTALL_SQLDIR "${CAFMQ_INSTALL_DATADIR}/sql")

set(cafmq_installed_targets cafmq_queue cafmq_web cafmq_actors)
if(TARGET cafmq-cli)
  list(APPEND cafmq_installed_targets cafmq-cli)
  # The tool finds the libraries next to it, in whatever prefix.
  set_target_properties(cafmq-cli PROPERTIES
    EXPORT_NAME cafmq
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()
# The runtime loads the dashboard's library (a private dependency, not on
# its users' link lines) from its own directory: their RUNPATH does not
# reach the libraries' dependencies.
set_target_properties(cafmq_actors PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS ${cafmq_installed_targets}
  EXPORT cafmqTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
# Public headers only: libqueue/cafmq/*.hpp, web/cafmq/web/*.hpp,
# actors/cafmq/actors/*.hpp and the generated cafmq/version.hpp (src/ holds
# the private ones).
install(DIRECTORY "${PROJECT_SOURCE_DIR}/libqueue/cafmq"
                  "${PROJECT_SOURCE_DIR}/web/cafmq"
                  "${PROJECT_SOURCE_DIR}/actors/cafmq"
                  "${CAFMQ_GENERATED_INCLUDE_DIR}/cafmq"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.hpp")
install(EXPORT cafmqTargets
  NAMESPACE cafmq::
  DESTINATION "${CAFMQ_INSTALL_CMAKEDIR}")

configure_package_config_file(cmake/cafmqConfig.cmake.in
  "${PROJECT_BINARY_DIR}/cafmqConfig.cmake"
  INSTALL_DESTINATION "${CAFMQ_INSTALL_CMAKEDIR}"
  PATH_VARS CAFMQ_INSTALL_SQLDIR CAFMQ_INSTALL_DATADIR)
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cafmqConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/cafmqConfig.cmake"
              "${PROJECT_BINARY_DIR}/cafmqConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/cafmqDependencies.cmake"
  DESTINATION "${CAFMQ_INSTALL_CMAKEDIR}")

# pkg-config: cafmq-queue, cafmq-web and cafmq-actors, relocatable
# (${pcfiledir}).
file(RELATIVE_PATH cafmq_pc_prefix
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
set(CAFMQ_PC_CAF_CFLAGS "")
if(NOT CAF_INCLUDE_DIR STREQUAL "/usr/include")
  set(CAFMQ_PC_CAF_CFLAGS "-I${CAF_INCLUDE_DIR}")
endif()
if(CAFMQ_SHARED_LIBS)
  set(CAFMQ_PC_PRIVATE_LIBS "")
else()
  # The runtime serves the dashboard (cafmq_web, on cpp-httplib).
  set(CAFMQ_PC_PRIVATE_LIBS "-lcafmq_web -lcpp-httplib -lssl -lcrypto")
endif()
foreach(pc cafmq-queue cafmq-web cafmq-actors)
  configure_file("cmake/${pc}.pc.in" "${PROJECT_BINARY_DIR}/${pc}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/${pc}.pc"
    DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endforeach()

# The migrations and the SQL functions (applied by the library itself;
# shipped for review and for DBAs who apply them by hand: the migrations by
# number, then the functions in the order functions/ORDER gives), the schema
# they produce, and the sample configuration the examples read.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/sql/migrations"
  "${PROJECT_SOURCE_DIR}/sql/functions"
  DESTINATION "${CAFMQ_INSTALL_SQLDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/sql/schema.sql"
  DESTINATION "${CAFMQ_INSTALL_SQLDIR}")
install(FILES "${PROJECT_SOURCE_DIR}/config/cafmq.ini"
  DESTINATION "${CAFMQ_INSTALL_DATADIR}")
# Prometheus alerting and recording rules (docs/operations.md#alerts).
install(FILES "${PROJECT_SOURCE_DIR}/config/prometheus/alerts.yml"
  "${PROJECT_SOURCE_DIR}/config/prometheus/recording.yml"
  DESTINATION "${CAFMQ_INSTALL_DATADIR}/prometheus")
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/README.md"
  DESTINATION "${CMAKE_INSTALL_DOCDIR}")

# cpack -G DEB: one package with the libraries, headers, tool, SQL and
# CMake config. Run-time dependencies come from dpkg-shlibdeps; the headers
# need the -dev packages of what they include, and cafmqConfig.cmake finds
# cpp-httplib (static builds link it).
set(CPACK_PACKAGE_NAME cafmq)
set(CPACK_PACKAGE_VENDOR "cafmq")
set(CPACK_PACKAGE_CONTACT "cafmq developers <cafmq@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Background-task queue for C++ on PostgreSQL and CAF")
set(CPACK_PACKAGE_DESCRIPTION
    "cafmq stores tasks in PostgreSQL (spawned and completed inside the "
    "application's transactions) and runs them on an actor runtime built "
    "on the C++ Actor Framework 0.17. This package holds the libraries, "
    "headers, CMake and pkg-config files, the cafmq tool and the SQL "
    "migrations.")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libcaf-dev (>= 0.17.6), libcaf-dev (<< 0.18), libpqxx-dev (>= 6.4), libpq-dev, nlohmann-json3-dev (>= 3), libcpp-httplib-dev (>= 0.11), prometheus-cpp-dev (>= 1.0), pkg-config")
include(CPack)
