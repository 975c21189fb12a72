"""`worker eval`: a batch of tasks, each a real `worker fix` run, each patch re-checked on a clean
copy in a fresh sandbox, and the resolve rate with its costs (docs/evaluation.md)."""
