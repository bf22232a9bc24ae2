"""Re-gate persisted rows, plan the next sweep, score review artifacts."""
