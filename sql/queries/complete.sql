SELECT * FROM cafmq.complete($1::uuid[], $2::integer[])
