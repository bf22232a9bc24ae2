"""The promotion decision: policy and thresholds, the implementation and review gates,
the promotion.json evidence they write, and its apply-time validation."""
