"""The errors of a Java project's environment: a JDK no source here has, a Gradle build whose
distribution these machines cannot reach, a dependency no repository has (exit 6, before any
model call)."""

from __future__ import annotations

from sandbox.errors import ProjectEnvironmentError


class WrongJdk(ProjectEnvironmentError):
    """The project asks for a JDK major no source here has: the message names what was asked
    (and where) and what exists."""


class GradleUnavailable(ProjectEnvironmentError):
    """A Gradle build: its distribution comes from Gradle's own host, which the sandbox does not
    reach; the message names the distribution's URL and how a user provides it."""
