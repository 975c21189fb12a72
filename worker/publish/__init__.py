"""`worker publish`'s logic: a verified patch as a commit, a push and a draft pull request."""
