#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian packages this project needs (idempotent; fast when
# everything is present).
#   setup.sh build   what building the libraries and examples, and the
#                    private PostgreSQL, need (the quickstart, example.sh)
#   setup.sh [all]   that and what the test suites use besides (test.sh)
set -euo pipefail

BUILD_PACKAGES=(build-essential cmake ninja-build pkg-config libcaf-dev libpqxx-dev
                nlohmann-json3-dev libssl-dev openssl libcli11-dev prometheus-cpp-dev
                libcpp-httplib-dev postgresql-15 postgresql-client-15 ccache)
TEST_PACKAGES=(clang-format pgbouncer postgresql-15-auto-failover doxygen prometheus
               chromium chromium-driver python3 curl file stress gdb)

case ${1:-all} in
  build) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
  all) PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "usage: setup.sh [build|all]" >&2; exit 2 ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "setup.sh: all ${#PACKAGES[@]} required packages are installed"
  exit 0
fi

install_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"

if [[ $EUID -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "setup.sh: error: missing packages: ${missing[*]}" >&2
  echo "setup.sh: run as root:  $install_cmd" >&2
  exit 1
fi

echo "setup.sh: installing: ${missing[*]}" >&2
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup.sh: installed ${missing[*]}"
