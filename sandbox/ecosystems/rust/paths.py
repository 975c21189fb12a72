"""Rust's protected files, which the registry adds to the path policy
(sandbox/ecosystems/__init__.py: language_paths). Constants only: every run loads them,
whatever its language."""

from __future__ import annotations

#: Every Cargo.toml and the lockfile, the toolchain file, cargo's configuration, build scripts
#: and benches. The tests inside a source file are guarded by the package's `weakened_tests`
#: (sandbox/ecosystems/rust/guard.py).
WRITE_DENY: tuple[str, ...] = (
    "**/Cargo.toml",
    "**/Cargo.lock",
    "**/rust-toolchain",
    "**/rust-toolchain.toml",
    "**/.cargo/**",
    "**/build.rs",
    "**/benches/**",
)
#: Integration tests live in `tests/`, the policy's own.
TEST_GLOBS: tuple[str, ...] = ()
