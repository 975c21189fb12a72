"""Python's protected files and test spellings, which the registry adds to the path policy
(sandbox/ecosystems/__init__.py: language_paths): how the tests are configured and run, and
what a test file is called. Constants only: every run loads them, whatever its language."""

from __future__ import annotations

#: The test runners' configuration and the project's build settings (a fix that changes how
#: the tests run, or what is installed, is not a fix).
WRITE_DENY: tuple[str, ...] = (
    "**/pytest.ini",
    "**/tox.ini",
    "**/setup.cfg",
    "**/pyproject.toml",
    "**/noxfile.py",
    "**/.coveragerc",
)
#: pytest's and unittest's file names, and the fixtures a conftest defines.
TEST_GLOBS: tuple[str, ...] = (
    "**/test_*.py",
    "**/*_test.py",
    "**/tests.py",
    "**/conftest.py",
)
