SELECT cafmq.cancel($1::uuid)
