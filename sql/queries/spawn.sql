SELECT id, created FROM cafmq.spawn($1::json)
