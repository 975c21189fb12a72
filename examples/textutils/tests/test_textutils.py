from textutils import slugify, word_count


def test_slugify_lowercases():
    assert slugify("Hello World") == "hello-world"


def test_slugify_drops_punctuation():
    assert slugify("Ready, set: go!") == "ready-set-go"


def test_word_count():
    assert word_count("one  two three") == 3
