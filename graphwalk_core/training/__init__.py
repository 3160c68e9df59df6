"""Learning a decider: decision examples (weak supervision, traces) and fitting a trained decider."""
