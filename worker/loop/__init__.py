"""The agent loop: ask the model, act, and let the harness decide when it is done."""
