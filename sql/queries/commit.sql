SELECT * FROM cafmq.commit($1::uuid[])
