SELECT * FROM cafmq.release($1::uuid[], $2::integer[])
