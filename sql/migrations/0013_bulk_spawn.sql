-- Batched spawn through COPY (spawn_many with many tasks): COPY cannot call
-- nextval per row, so the queue position becomes the column's default. Rows
-- take it in the order they arrive, as the spawn function's INSERT gives it.
ALTER TABLE cafmq.tasks ALTER COLUMN seq SET DEFAULT nextval('cafmq.task_seq');
