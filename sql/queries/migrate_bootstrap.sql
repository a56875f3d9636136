CREATE SCHEMA IF NOT EXISTS cafmq;
CREATE TABLE IF NOT EXISTS cafmq.schema_version (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now())
