"""`worker ci`'s logic: what CI saw failing, flaky triage, the CI outputs (no flags here)."""
