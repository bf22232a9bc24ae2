"""A tiny statistics package."""


def mean(values):
    return sum(values) / len(values)
