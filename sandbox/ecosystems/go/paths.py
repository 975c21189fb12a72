"""Go's protected files and test spellings, which the registry adds to the path policy
(sandbox/ecosystems/__init__.py: language_paths). Constants only: every run loads them,
whatever its language."""

from __future__ import annotations

#: go.mod, go.sum and vendor/ (a fix that changes the module's dependencies is not a bug fix),
#: go.work and its sum (which modules a build uses).
WRITE_DENY: tuple[str, ...] = (
    "**/go.mod",
    "**/go.sum",
    "**/go.work",
    "**/go.work.sum",
    "**/vendor/**",
)
#: `go test`'s files and the data folder the go tool leaves alone.
TEST_GLOBS: tuple[str, ...] = (
    "**/*_test.go",
    "**/testdata/**",
)
