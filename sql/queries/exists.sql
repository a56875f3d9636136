SELECT EXISTS (SELECT 1 FROM cafmq.tasks WHERE id = $1::uuid)
