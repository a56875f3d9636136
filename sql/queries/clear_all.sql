SELECT cafmq.clear_all()
