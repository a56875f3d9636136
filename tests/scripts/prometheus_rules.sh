#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Prometheus rules cafmq ships (config/prometheus): valid for promtool,
# tested by tests/prometheus/rules_test.yml (each alert fires where it
# should and nowhere else; each recorded series has its expected value),
# and shown as they are in docs/operations.md (the cookbook's block).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
command -v promtool >/dev/null || { echo "FAIL: promtool is missing (apt-get install prometheus)" >&2; exit 1; }
promtool check rules "$ROOT"/config/prometheus/*.yml
promtool test rules "$ROOT/tests/prometheus/rules_test.yml"
shown=$(awk '/^<!-- config\/prometheus\/recording.yml -->$/ {on=1; next}
  on && /^```yaml$/ {inside=1; next} inside && /^```$/ {exit} inside' \
  "$ROOT/docs/operations.md")
[[ $shown == "$(cat "$ROOT/config/prometheus/recording.yml")" ]] \
  || { echo "FAIL: docs/operations.md's cookbook differs from config/prometheus/recording.yml" >&2; exit 1; }
echo "prometheus_rules: ok"
