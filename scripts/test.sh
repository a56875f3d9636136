#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Project test command: install deps, build with -Werror (and the API docs with
# Doxygen, warnings as errors), start the private PostgreSQL, run ctest (extra
# args go to ctest).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
# The actor and thread suites are built and run by the sanitizer stages
# below, not twice: build/ holds the unit, db, e2e and example suites.
# Line tables only (-g1): file:line in backtraces, a third less compile time
# than full debug info.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAFMQ_WERROR=ON \
  -DCAFMQ_BUILD_ACTOR_TESTS=OFF -DCAFMQ_BUILD_DOCS=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
cmake --build build -j2

# AddressSanitizer over the suites that need no database (unit and
# deterministic actor tests), UndefinedBehaviorSanitizer in the libraries
# they test; any report fails the run.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCAFMQ_SANITIZE=ON \
  -DCAFMQ_WERROR=ON -DCAFMQ_BUILD_EXAMPLES=OFF
cmake --build build-asan -j2 --target cafmq-unit-tests cafmq-actor-tests \
  cafmq-thread-tests
UBSAN_OPTIONS="suppressions=$PWD/tests/sanitizer.supp:halt_on_error=1:print_stacktrace=1" \
  ctest --test-dir build-asan -L unit --output-on-failure

# The suites that run real threads under ThreadSanitizer (it cannot share a
# build with ASan; the other unit and actor suites are single-threaded); any
# report fails the run. tests/tsan.supp lists only races inside CAF.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCAFMQ_TSAN=ON \
  -DCAFMQ_WERROR=ON -DCAFMQ_BUILD_EXAMPLES=OFF
cmake --build build-tsan -j2 --target cafmq-thread-tests
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1" \
  ctest --test-dir build-tsan -L threads --output-on-failure

if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
  CAFMQ_PG_FAST=1 bash scripts/pg.sh start
fi
CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
export CAFMQ_DATABASE_URL

exec ctest --test-dir build -j2 --output-on-failure "$@"
