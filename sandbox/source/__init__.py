"""The repository's source read as code, never run: what every language package shares.

The types a language package hands the loop and the search through the seam
(sandbox/ecosystems/base.py): the code a first message shows (`Grounding`), the places failing
tests name (`Place`), a traced run's per-line counts (`LineCounts`), and lines numbered the one
way every observation quotes them (numbered.py).
"""
