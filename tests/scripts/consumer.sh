#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A user's project on cafmq (tests/consumer/), built and run three ways:
#   install       against `cmake --install` into a prefix (CMake package and
#                 pkg-config files, and the installed tool)
#   deb           against the Debian package (cpack -G DEB, dpkg -i, removed
#                 at the end)
#   subdirectory  through add_subdirectory of the source tree; with
#                 CAFMQ_SUBDIRECTORY_BUILD=DIR, the consumer already built
#                 in DIR (a tree of tests/consumer with CAFMQ_SOURCE_DIR set
#                 to this checkout: scripts/test.sh's ASan tree) instead of
#                 compiling the libraries again
# usage: consumer.sh BUILD_DIR [MODE...]  (default: all three)
# Needs CAFMQ_DATABASE_URL; each consumer spawns a task and runs it there.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=$(cd "$1" && pwd -P)
shift
MODES=("$@")
((${#MODES[@]})) || MODES=(install deb subdirectory)
: "${CAFMQ_DATABASE_URL:?consumer.sh: set CAFMQ_DATABASE_URL}"

WORK=$(mktemp -d /tmp/cafmq-consumer.XXXXXX)
deb_installed=0
cleanup() {
  if ((deb_installed)); then
    dpkg -P cafmq >/dev/null || echo "consumer.sh: dpkg -P cafmq failed" >&2
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

die() { echo "consumer.sh: FAIL: $*" >&2; exit 1; }
step() { echo "consumer.sh: $*"; }
VERSION=$(sed -n 's/^project(cafmq VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[[ -n $VERSION ]] || die "no version in CMakeLists.txt"

# Builds tests/consumer in $1 with the extra cmake arguments, runs it and
# checks that its task ran.
build_and_run() {
  local dir=$1; shift
  cmake -S "$ROOT/tests/consumer" -B "$dir" -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g0" "$@" >"$dir.configure.log" 2>&1 \
    || { cat "$dir.configure.log"; die "configure failed ($*)"; }
  grep -h 'cafmq .* from' "$dir.configure.log" || true
  cmake --build "$dir" -j2 >"$dir.build.log" 2>&1 \
    || { tail -40 "$dir.build.log"; die "build failed ($*)"; }
  run_consumer "$dir/consumer"
}

run_consumer() {
  local out
  out=$("$1") || die "$1 exited $?"
  [[ $out == "Hello, consumer! (cafmq $VERSION, task "* ]] \
    || die "$1 printed: $out"
  step "$1: $out"
}

# The tool prints the library's and the schema's version.
check_tool() {
  local out
  out=$("$1" --version) || die "$1 --version exited $?"
  [[ $out =~ ^cafmq\ $VERSION\ \(schema\ [0-9]+\)$ ]] \
    || die "$1 --version printed: $out"
  step "$1 --version: $out"
}

# docs/install.md ("A complete program") shows tests/consumer/main.cpp:
# the program it shows is the one built here.
docs_program=$(awk '/^<!-- tests\/consumer\/main.cpp -->$/ {on=1; next}
  on && /^```cpp$/ {inside=1; next} inside && /^```$/ {exit} inside' \
  "$ROOT/docs/install.md")
[[ $docs_program == "$(tail -n +2 "$ROOT/tests/consumer/main.cpp")" ]] \
  || die "docs/install.md's program differs from tests/consumer/main.cpp"

for mode in "${MODES[@]}"; do
  case $mode in
  install)
    step "cmake --install into $WORK/prefix"
    cmake --install "$BUILD" --prefix "$WORK/prefix" >"$WORK/install.log" \
      || die "cmake --install failed"
    for f in include/cafmq/version.hpp include/cafmq/actors/runner.hpp \
             share/cafmq/sql/migrations/0001_schema.sql \
             share/cafmq/sql/functions/ORDER share/cafmq/sql/functions/claim.sql \
             share/cafmq/cafmq.ini \
             share/cafmq/prometheus/alerts.yml bin/cafmq; do
      [[ -e $WORK/prefix/$f ]] || die "not installed: $f"
    done
    # Internal headers (libqueue/internal, actors/internal) stay out.
    if find "$WORK/prefix/include" -path '*/detail/*' | grep -q .; then
      die "internal headers installed: $(find "$WORK/prefix/include" -path '*/detail/*')"
    fi
    check_tool "$WORK/prefix/bin/cafmq"
    build_and_run "$WORK/install" "-DCMAKE_PREFIX_PATH=$WORK/prefix"
    # The same program through pkg-config.
    pcdir=$(dirname "$(find "$WORK/prefix" -name cafmq-actors.pc)")
    libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir cafmq-actors)
    # shellcheck disable=SC2046
    g++ -std=c++17 -O0 -o "$WORK/consumer-pc" "$ROOT/tests/consumer/main.cpp" \
      $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs cafmq-actors) \
      "-Wl,-rpath,$libdir" || die "pkg-config build failed"
    [[ $(PKG_CONFIG_PATH=$pcdir pkg-config --modversion cafmq-actors) == "$VERSION" ]] \
      || die "pkg-config version"
    run_consumer "$WORK/consumer-pc"
    ;;
  deb)
    [[ $EUID -eq 0 ]] || die "installing the .deb needs root"
    if [[ $(dpkg-query -W -f='${Status}' cafmq 2>/dev/null) == *" installed" ]]; then
      die "a cafmq package is installed already; remove it first (dpkg -P cafmq)"
    fi
    step "cpack -G DEB"
    (cd "$BUILD" && cpack -G DEB -B "$WORK/deb" >"$WORK/cpack.log" 2>&1) \
      || { cat "$WORK/cpack.log"; die "cpack failed"; }
    deb=$(ls "$WORK"/deb/cafmq_*.deb)
    dpkg-deb -f "$deb" Depends
    dpkg -i "$deb" >/dev/null || die "dpkg -i $deb failed"
    deb_installed=1
    contents=$(dpkg -L cafmq)
    for f in /usr/include/cafmq/actors/runner.hpp /usr/include/cafmq/version.hpp \
             /usr/bin/cafmq /usr/share/cafmq/sql/migrations/0001_schema.sql \
             /usr/share/cafmq/sql/functions/claim.sql \
             /usr/share/cafmq/prometheus/alerts.yml \
             /usr/lib/cmake/cafmq/cafmqConfig.cmake; do
      grep -qx "$f" <<<"$contents" || die "the package lacks $f"
    done
    grep -q '/usr/lib/libcafmq_actors.so' <<<"$contents" \
      || die "the package lacks libcafmq_actors.so"
    check_tool /usr/bin/cafmq
    build_and_run "$WORK/deb-consumer"
    dpkg -P cafmq >/dev/null
    deb_installed=0
    ;;
  subdirectory)
    step "add_subdirectory($ROOT)"
    # By default a consumer's build makes only the libraries it links: no
    # tests, examples or bench (the commands of its whole build, not run).
    cmake -S "$ROOT/tests/consumer" -B "$WORK/subdirectory-plan" -G Ninja \
      "-DCAFMQ_SOURCE_DIR=$ROOT" >"$WORK/plan.configure.log" 2>&1 \
      || { cat "$WORK/plan.configure.log"; die "configure failed (add_subdirectory)"; }
    plan=$(ninja -C "$WORK/subdirectory-plan" -t commands all)
    grep -q 'libcafmq_actors' <<<"$plan" \
      || die "a consumer's build would not make libcafmq_actors"
    if grep -E 'cafmq-[a-z]+-tests|cafmq-bench|cafmq-quickstart' <<<"$plan"; then
      die "a consumer's build would make tests, examples or the bench"
    fi
    for option in TESTS EXAMPLES BENCH; do
      grep -qx "CAFMQ_BUILD_$option:BOOL=OFF" "$WORK/subdirectory-plan/CMakeCache.txt" \
        || die "CAFMQ_BUILD_$option is not OFF under add_subdirectory"
    done
    if [[ -n ${CAFMQ_SUBDIRECTORY_BUILD:-} ]]; then
      tree=$(cd "$CAFMQ_SUBDIRECTORY_BUILD" && pwd -P)
      src=$(sed -n 's/^CAFMQ_SOURCE_DIR:[A-Z]*=//p' "$tree/CMakeCache.txt")
      [[ -n $src && $(cd "$src" && pwd -P) == "$ROOT" ]] \
        || die "$tree is not tests/consumer with add_subdirectory($ROOT)"
      cmake --build "$tree" -j2 --target consumer >"$WORK/subdirectory.build.log" 2>&1 \
        || { tail -40 "$WORK/subdirectory.build.log"; die "build failed ($tree)"; }
      run_consumer "$tree/consumer"
    else
      # One unity batch per library: the least CPU for a tree built once.
      build_and_run "$WORK/subdirectory" "-DCAFMQ_SOURCE_DIR=$ROOT" \
        -DCAFMQ_UNITY_BATCH_SIZE=0
    fi
    ;;
  *) die "unknown mode $mode" ;;
  esac
done
step "ok: ${MODES[*]}"
