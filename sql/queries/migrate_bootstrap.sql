-- SPDX-License-Identifier: BSD-3-Clause
SET LOCAL client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS cafmq;
CREATE TABLE IF NOT EXISTS cafmq.schema_version (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  -- SHA-256 of the migration's file; NULL only in rows recorded before
  -- checksums existed, until migrate() backfills them.
  checksum text);
-- Databases migrated before checksums existed lack the column.
ALTER TABLE cafmq.schema_version ADD COLUMN IF NOT EXISTS checksum text;
-- The SHA-256 of each SQL function file (sql/functions/NAME.sql) as last
-- applied: migrate() applies a file again when the binary's differs.
CREATE TABLE IF NOT EXISTS cafmq.schema_functions (
  name text PRIMARY KEY,
  checksum text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now())
