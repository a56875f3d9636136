SELECT cafmq.record_started($1, $2::uuid[])
