"""Go modules behind the ecosystem seam (sandbox/ecosystems/go/ecosystem.py)."""
