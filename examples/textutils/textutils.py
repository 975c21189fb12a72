"""Text helpers."""

import re


def slugify(text):
    """Turn a title into a URL slug: lowercase words joined by dashes."""
    words = re.findall(r"[A-Za-z0-9]+", text)
    return "-".join(words)


def word_count(text):
    """Number of words separated by whitespace."""
    return len(text.split())
