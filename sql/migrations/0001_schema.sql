-- Tables, types and indexes of the queue. Every object lives in schema cafmq.

-- Lifecycle of a task. 'uncommitted' is a two-phase reservation.
CREATE TYPE cafmq.task_state AS ENUM (
  'uncommitted', 'pending', 'running', 'completed', 'failed', 'cancelled');

-- Spawn order; ordered tasks of one channel run by ascending seq.
CREATE SEQUENCE cafmq.task_seq AS bigint;

-- The hot scheduling row: small, updated on every state change.
CREATE TABLE cafmq.tasks (
  id uuid PRIMARY KEY,
  seq bigint NOT NULL,
  name text NOT NULL,
  channel_name text COLLATE "C" NOT NULL,
  channel_args text COLLATE "C" NOT NULL,
  state cafmq.task_state NOT NULL,
  ordered boolean NOT NULL,
  attempt integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  -- pending: earliest start; running: lease expiry.
  run_at timestamptz NOT NULL,
  backoff interval NOT NULL,
  backoff_cap interval NOT NULL,
  -- Two-phase reservations expire unless committed before this time.
  commit_deadline timestamptz,
  timeout interval,
  deadline timestamptz,
  unique_key text,
  cancel_requested boolean NOT NULL DEFAULT false,
  node text,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  CONSTRAINT tasks_name_length CHECK (octet_length(name) BETWEEN 1 AND 255),
  CONSTRAINT tasks_channel_name_length CHECK (octet_length(channel_name) <= 255),
  CONSTRAINT tasks_channel_args_length CHECK (octet_length(channel_args) <= 4096),
  CONSTRAINT tasks_unique_key_length CHECK (octet_length(unique_key) <= 1024),
  CONSTRAINT tasks_attempts CHECK (max_attempts >= 1 AND attempt >= 0),
  CONSTRAINT tasks_backoff CHECK (backoff >= interval '0' AND backoff_cap >= backoff),
  CONSTRAINT tasks_timeout CHECK (timeout > interval '0'),
  CONSTRAINT tasks_two_phase CHECK ((state = 'uncommitted') = (commit_deadline IS NOT NULL))
) WITH (fillfactor = 80,
        autovacuum_vacuum_scale_factor = 0,
        autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_cost_delay = 0,
        autovacuum_analyze_scale_factor = 0.02);

-- Payloads live apart so the scheduling row stays small (sqlxmq's split).
CREATE TABLE cafmq.payloads (
  id uuid PRIMARY KEY REFERENCES cafmq.tasks (id) ON DELETE CASCADE,
  json jsonb,
  bytes bytea
);

-- Ready unordered work per channel: the fair pass walks channels through it.
CREATE INDEX tasks_unordered_ready ON cafmq.tasks
  (channel_name, channel_args, run_at, seq)
  WHERE state = 'pending' AND NOT ordered;

-- Ready unordered work in queue order: the fill pass of a claim.
CREATE INDEX tasks_unordered_queue ON cafmq.tasks (run_at, seq)
  WHERE state = 'pending' AND NOT ordered;

-- Live ordered tasks; the first row of a channel is its head.
CREATE INDEX tasks_ordered_live ON cafmq.tasks
  (channel_name, channel_args, seq)
  WHERE ordered AND state IN ('uncommitted', 'pending', 'running');

-- Scheduled ordered work, for the next wake-up time.
CREATE INDEX tasks_ordered_pending ON cafmq.tasks (run_at)
  WHERE ordered AND state = 'pending';

-- Leases, so an expired one is found without scanning.
CREATE INDEX tasks_running ON cafmq.tasks (run_at) WHERE state = 'running';

-- Reservations, so an expired one is found without scanning.
CREATE INDEX tasks_uncommitted ON cafmq.tasks (commit_deadline)
  WHERE state = 'uncommitted';

-- At most one live task per unique key.
CREATE UNIQUE INDEX tasks_unique_key ON cafmq.tasks (unique_key)
  WHERE state IN ('uncommitted', 'pending', 'running');

-- Finished tasks by age, for pruning.
CREATE INDEX tasks_finished ON cafmq.tasks (finished_at)
  WHERE state IN ('completed', 'failed', 'cancelled');

-- Tasks someone watches live (cafmq::watch): only changes of these tasks are
-- published, so an unwatched queue pays nothing for status updates.
CREATE TABLE cafmq.watches (
  task_id uuid NOT NULL,
  backend_pid integer NOT NULL DEFAULT pg_backend_pid(),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, backend_pid)
);
