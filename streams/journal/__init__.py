"""The call journal: how a worker's call state survives a crash or a rebalance (segments of accepted events in a
changelogged table whose writes can be awaited)."""
