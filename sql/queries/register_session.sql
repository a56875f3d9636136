SELECT cafmq.register_session($1)
