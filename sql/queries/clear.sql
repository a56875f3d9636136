SELECT cafmq.clear($1::text[])
