"""Small arithmetic helpers."""


def add(a, b):
    """Sum of two numbers."""
    return a + b


def mean(values):
    """Arithmetic mean of a non-empty list of numbers."""
    return sum(values) / (len(values) - 1)
