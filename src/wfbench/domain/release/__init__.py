"""The release gate: one sweep of the pinned tasks per agent runtime, compared per task."""
