# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the script tests that drain under a fault: spawn `n` tasks for
# `cafmq-e2e runner`'s "record" handler, start runners, wait for them, check
# the ledger. Needs `sql` (psql on the test database), `fail`, and `pids`.

# e2e_runs, written by each completing transaction (and e2e_starts, which
# "hold" writes), and `n` tasks over `channels` channels, 25 attempts each
# with a short backoff: "record" with payload i, or with `hold_ms` "hold",
# which works that long in its first attempt before it records.
spawn_load() {
  local n=$1 channels=$2 hold_ms=${3:-} name=record json=i::text
  [[ -n $hold_ms ]] && { name=hold; json="'$hold_ms'"; }
  sql "CREATE TABLE e2e_runs (id uuid, attempt int, node text, channel text,
       payload int, started timestamptz, finished timestamptz);
       CREATE TABLE e2e_starts (id uuid, attempt int, node text, at timestamptz)"
  sql "SELECT count(*) FROM cafmq.spawn((SELECT json_agg(json_build_object(
         'id', gen_random_uuid(), 'name', '$name',
         'channel_name', 'c' || (i % $channels), 'channel_args', '',
         'ordered', false, 'max_attempts', 25, 'backoff_us', 100000,
         'backoff_cap_us', 1000000, 'json', $json))
         FROM generate_series(1, $n) i))" >/dev/null
}

# Waits until e2e_runs holds `at_least` rows (`seconds`, 10 by default, at
# most).
wait_for_runs() {
  local at_least=$1 seconds=${2:-10}
  for _ in $(seq $((seconds * 50))); do
    [[ $(sql "SELECT count(*) FROM e2e_runs") -ge $at_least ]] && return
    sleep 0.02
  done
}

# Waits for the runners in `pids` (they exit once nothing is left), `limit`
# seconds at most, after `what`.
wait_runners() {
  local limit=$1 what=$2 p
  for p in "${pids[@]}"; do
    for _ in $(seq $((limit * 20))); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$p" 2>/dev/null && fail "a runner did not finish within $limit s of $what"
    wait "$p" || fail "a runner exited with status $?"
  done
  pids=()
}

# Every one of `n` tasks completed, each once in the ledger.
check_ledger() {
  local n=$1
  [[ $(sql "SELECT count(*) FROM cafmq.tasks WHERE state = 'completed'") == "$n" ]] \
    || fail "not every task completed: $(sql "SELECT state, count(*) FROM cafmq.tasks GROUP BY 1")"
  [[ $(sql "SELECT count(*) FROM e2e_runs") == "$n" ]] \
    || fail "the ledger holds $(sql "SELECT count(*) FROM e2e_runs") rows, want $n"
  [[ $(sql "SELECT count(DISTINCT id) FROM e2e_runs") == "$n" ]] || fail "a task completed twice"
}
