"""Rust (cargo) projects behind the ecosystem seam: see ecosystem.py and docs/rust-tests.md."""
