#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Project test command: install what the suites need, build build/ (the `dev`
# preset, as the quickstart does, plus the API docs with Doxygen, warnings as
# errors), start the private PostgreSQL and run every suite of build/ (extra
# args go to that ctest, e.g. -L db, -R ordered) while the unit and actor
# suites (and the add_subdirectory consumer) are built and run under
# AddressSanitizer + UBSan and the thread suites under ThreadSanitizer. Prints each stage's wall time at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

stages=()
started=$SECONDS
stage() {
  local name=$1 t0=$SECONDS
  shift
  echo "test.sh: == $name"
  "$@"
  stages+=("$(printf '%-10s %4d s' "$name" $((SECONDS - t0)))")
}
report() {
  local rc=$?
  echo "test.sh: stage wall times:"
  for s in "${stages[@]}"; do echo "test.sh:   $s"; done
  echo "test.sh:   total      $((SECONDS - started)) s (exit $rc)"
}
trap report EXIT

build_dev() {
  cmake --preset dev -DCAFMQ_BUILD_DOCS=ON >/dev/null
  cmake --build build -j2
}

# Unit and deterministic actor suites under ASan everywhere and UBSan in the
# libraries; any report fails the run. The tree is the asan preset's, built
# under tests/consumer's add_subdirectory: it is also the package test's
# add_subdirectory mode, whose consumer then runs under ASan too.
asan() {
  local tree=build-asan-subdirectory
  cmake -S tests/consumer --preset asan-subdirectory >/dev/null \
    && cmake --build $tree -j2 --target cafmq-unit-tests \
      cafmq-actor-tests cafmq-thread-tests consumer \
    && UBSAN_OPTIONS="suppressions=$PWD/tests/sanitizer.supp:halt_on_error=1:print_stacktrace=1" \
      ctest --test-dir $tree/cafmq -L unit -j2 --output-on-failure \
    && CAFMQ_SUBDIRECTORY_BUILD=$tree \
      bash tests/scripts/consumer.sh build subdirectory
}

# The suites that run real threads (the deterministic actor suites run on
# one thread); tests/tsan.supp lists only races inside CAF.
tsan() {
  cmake --preset tsan >/dev/null \
    && cmake --build build-tsan -j2 --target cafmq-thread-tests \
    && TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1" \
      ctest --test-dir build-tsan -L threads --output-on-failure
}

database() {
  if [[ -z ${CAFMQ_DATABASE_URL:-} ]]; then
    CAFMQ_PG_FAST=1 bash scripts/pg.sh start || return
  fi
  CAFMQ_DATABASE_URL=$(bash scripts/pg.sh url)
}

suites() {
  ctest --test-dir build -j2 --output-on-failure "$@"
}

# The sanitizer builds compile while the suites of build/ run, which wait
# on processes, timers and the database much of the time. The small TSan
# tree builds beside the ASan one (whose actor library, one long compile,
# ends the stage), so it is not left for the end. Their output goes to
# build/sanitizers.log, shown when they fail.
sanitizers() {
  local t0=$SECONDS rc=0 pid
  tsan >build/sanitizers-tsan.log 2>&1 &
  pid=$!
  asan >build/sanitizers.log 2>&1 || rc=$?
  wait "$pid" || rc=$?
  cat build/sanitizers-tsan.log >>build/sanitizers.log
  echo "$((SECONDS - t0))" >build/sanitizers.time
  return $rc
}

both() {
  sanitizers &
  local pid=$! rc=0 t0=$SECONDS
  suites "$@" || rc=$?
  stages+=("$(printf '%-10s %4d s' suites $((SECONDS - t0)))")
  if ! wait "$pid"; then
    tail -n 200 build/sanitizers.log
    echo "test.sh: the sanitizer stage failed (build/sanitizers.log)" >&2
    rc=1
  fi
  stages+=("$(printf '%-10s %4d s' sanitizers "$(cat build/sanitizers.time)")")
  return $rc
}

stage setup bash scripts/setup.sh all
stage build build_dev
stage database database
export CAFMQ_DATABASE_URL
stage both both "$@"
