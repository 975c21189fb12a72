"""`worker show`: one self-contained HTML page of a run (or an eval's index of them)."""
