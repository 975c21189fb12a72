"""The wiring of one `worker fix` run: named steps from a prepared sandbox to a verified,
delivered patch."""
