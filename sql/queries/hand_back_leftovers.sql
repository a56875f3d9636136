SELECT cafmq.hand_back_leftovers($1)
