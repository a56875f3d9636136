-- The claim in functions of about 150 lines at most, each named for what it
-- does (sql/functions/claim*.sql).
--
-- What a claim returns, one type for the claim's functions (sql/functions/
-- claim*.sql): a claimed task (id set, ended NULL), a task the claim ended
-- instead of running (ended set: its new state, with error), or the last
-- row (id NULL) with where the walk over the channels stopped and how long
-- the runner may wait before the next task is due.
CREATE TYPE cafmq.claim_row AS (
    id uuid,
    name text,
    channel_name text,
    channel_args text,
    attempt integer,
    max_attempts integer,
    ordered boolean,
    timeout interval,
    deadline timestamp with time zone,
    payload_json text,
    payload_bytes bytea,
    cursor_name text,
    cursor_args text,
    wait interval,
    ended text,
    error text);

-- cafmq.claim returned a TABLE of these columns; its file creates it again
-- returning this type. claim_unpaused is claim_ready now.
DROP FUNCTION cafmq.claim(text, text[], text[], text[], integer, interval,
    integer, text, text);
DROP FUNCTION cafmq.claim_unpaused(text, text[], text[], text[], integer,
    interval, integer, text, text);
