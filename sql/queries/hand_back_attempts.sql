SELECT cafmq.hand_back_attempts($1::uuid[], $2::integer[])
