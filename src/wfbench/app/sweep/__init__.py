"""The run use case: scheduler, executors' fold, environments, reuse, progress, spend, finish."""
