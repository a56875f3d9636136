#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build the project, start the private PostgreSQL and run the quickstart example (args go to the example).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/example.sh" quickstart "$@"
