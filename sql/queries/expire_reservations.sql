SELECT cafmq.expire_reservations($1)
