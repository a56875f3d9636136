INSERT INTO cafmq.watches (task_id) VALUES ($1::uuid) ON CONFLICT DO NOTHING
