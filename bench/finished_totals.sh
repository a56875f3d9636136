#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measures (asserts nothing) the finished totals that `cafmq stats` and the
# dashboard read (sql/queries/queue_stats.sql with the totals), with N
# finished tasks (default 1,000,000) in the history: median of 7 runs of
# the statement (psql's \timing), once the counts are folded (as prune
# leaves them), then with DELTAS (default 200,000) count rows not folded
# yet (one per finishing statement: about a minute and a half of
# complete(tx) per task at the 2,300 tasks/s it ran on 2 cores, where prune
# folds every minute), and, for
# comparison, the count over the history that the totals were before
# migration 0018. In a fresh database of CAFMQ_DATABASE_URL.
#
#   bench/finished_totals.sh CLI [N] [DELTAS]     (CLI: build/tools/cafmq)
set -euo pipefail
cli=$1 n=${2:-1000000} deltas=${3:-200000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
source "$here/../tests/scripts/dashboard_lib.sh"
trap drop_database EXIT
fresh_database cafmq_totals
sql() { psql "$url" -v ON_ERROR_STOP=1 -qtAc "$1"; }

# Median of 7 timings of a statement, in ms (after one run to warm up).
median_ms() {
  local script='\timing on'$'\n'
  for _ in $(seq 8); do script+="$1;"$'\n'; done
  psql "$url" -v ON_ERROR_STOP=1 -qtA <<<"$script" |
    awk '/^Time:/ { t[n++] = $2 } END {
      for (i = 1; i < n; ++i) s[i - 1] = t[i]; m = n - 1
      for (i = 0; i < m; ++i) for (j = i + 1; j < m; ++j)
        if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
      printf "%.1f", s[int(m / 2)] }'
}
stats=$(sed -e '/^--/d' -e 's/\$1::boolean/true/' \
  "$here/../sql/queries/queue_stats.sql" | tr '\n' ' ')

psql "$url" -v ON_ERROR_STOP=1 -q -v n="$n" -v step="'100 ms'" \
  -f "$here/../tests/scripts/finished_tasks.sql"
# Folds the counts, and makes today's partition (moving today's rows out of
# the default one) before the statistics are taken.
sql "SELECT cafmq.prune(interval '100 years', 1000)" >/dev/null
sql "VACUUM ANALYZE cafmq.tasks_history, cafmq.finished_counts"
echo "history: $(sql "SELECT count(*) FROM cafmq.tasks_history") tasks;" \
  "finished_counts: $(sql "SELECT count(*) FROM cafmq.finished_counts") rows"
echo "stats with the finished totals, folded: $(median_ms "$stats") ms"
sql "INSERT INTO cafmq.finished_counts
     SELECT current_date, (ARRAY['mail', 'images', 'billing'])[1 + i % 3],
            'completed', 1
       FROM generate_series(1, $deltas) i"
sql "VACUUM ANALYZE cafmq.finished_counts"
echo "stats with the finished totals, $deltas rows not folded:" \
  "$(median_ms "$stats") ms"
echo "the count over the history (the totals before migration 0018):" \
  "$(median_ms "SELECT channel_name, state, count(*) FROM cafmq.tasks_history GROUP BY 1, 2") ms"
