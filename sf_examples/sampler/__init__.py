"""Tools that measure env sampling speed without a policy (upper bounds for training throughput)."""
