"""The search for a small model's fix: what the run does because a small model makes mistakes
(sampled first edits, suspect lines, warmer retries, second choices, and the bundled model's
profile of settings). The loop (worker/loop/) never imports it: the search opens a run through
the loop's one seam, worker/loop/opening.py. docs/architecture.md has the rule."""
