"""The errors of the rules layer: the user's configuration, or a path the policy refuses."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration file, preset, flag value or budget is invalid (unknown key, wrong type)."""


class PolicyRefusal(ValueError):
    """A path or an action the policy does not allow."""
