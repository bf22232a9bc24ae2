"""A sweep as a pure state machine: canonical cell order, the outage breaker and the
in-order fold, comparator reuse from prior sweeps, and which rows a resume keeps."""
