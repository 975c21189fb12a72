"""Which Python a run's sandbox gets, from what the repository says
(sandbox/ecosystems/python/pins.py) and
the Debian releases an image can be built on (sandbox/container/suites.py).

In order: an image the user named wins (no choice here); else the first file that pins a
version a release ships and `requires-python` accepts (`.python-version`, then the CI
workflows; within one file the default's Python when it is among them, as a CI matrix's versions
all pass and the default's image needs no build); else the default (3.11) when `requires-python`
accepts it; else the newest release whose Python it accepts; else `WrongPython` (exit 6), naming
what was wanted and what there is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.container.suites import DEFAULT_SUITE, SUITES, Suite
from sandbox.ecosystems.python.pins import PythonPins, python_satisfies, read_pins
from sandbox.errors import ProjectEnvironmentError

if TYPE_CHECKING:
    import docker


class WrongPython(ProjectEnvironmentError):
    """The project's `requires-python` excludes the sandbox image's Python, or every Python an
    image can be built with here."""


@dataclass(frozen=True, kw_only=True)
class PythonChoice:
    """The release (and so the image) a run gets, and why."""

    suite: Suite
    why: str  # "requires-python >=3.12", ".python-version 3.13", "the default"
    requires_python: str | None = None
    passed_over: tuple[str, ...] = ()  # pins no release here ships, or requires-python refuses

    def describe(self, built_s: float | None = None) -> str:
        """One line: the Python, why, and its image (built now, or there already)."""
        why = "; ".join((self.why, *(f"no image for {p}" for p in self.passed_over)))
        how = "up to date" if built_s is None else f"built once in {built_s:.0f} s"
        return f"Python {self.suite.version} ({why}): image {self.suite.image}, {how}"

    @property
    def image(self) -> str:
        return self.suite.image

    def ensure(
        self, client: docker.DockerClient, *, progress: Callable[[str], None]
    ) -> float | None:
        """Build this release's image if it is not there (sandbox/container/image.py)."""
        from sandbox.container.image import ensure_image

        return ensure_image(client, name=self.image, suite=self.suite, progress=progress).built_s

    def report_fields(self, *, built_s: float | None = None) -> dict[str, Any]:
        """`python_choice` (this choice), and the `requires_python` it followed."""
        return {
            "python_choice": self.to_dict(built_s=built_s),
            "requires_python": self.requires_python,
        }

    def to_dict(self, *, built_s: float | None = None) -> dict[str, Any]:
        """The report's `setup.python_choice`; `built_s`: the image was built by this run."""
        return {
            "version": self.suite.version,
            "debian": self.suite.name,
            "image": self.suite.image,
            "why": self.why,
            "passed_over": list(self.passed_over),
            "built_s": built_s,
        }


def python_for(repo: Path, *, image: str | None, backend: str) -> PythonChoice | None:
    """The choice for a run on `repo`; None when an image is named (its Python is checked once
    it is there) or the backend is the host's own Python."""
    if image or backend != "docker":
        return None
    return choose_python(read_pins(repo))


def choose_python(pins: PythonPins, suites: tuple[Suite, ...] = SUITES) -> PythonChoice:
    """The release for a project that says `pins` of its Python (the module's order)."""
    wanted = pins.requires_python

    def accepts(suite: Suite) -> bool:  # an unreadable specifier refuses nothing, as before
        return wanted is None or python_satisfies(wanted, suite.python_full) is not False

    by_python = {s.python: s for s in suites}
    passed_over: list[str] = []
    for _source, group in groupby(pins.pins, key=lambda p: p.source):
        pins_here = list(group)
        usable = [p for p in pins_here if p.python in by_python and accepts(by_python[p.python])]
        if usable:
            pin = next((p for p in usable if p.python == DEFAULT_SUITE.python), usable[0])
            return PythonChoice(
                suite=by_python[pin.python],
                why=pin.describe(),
                requires_python=wanted,
                passed_over=tuple(passed_over),
            )
        passed_over += [p.describe() for p in pins_here]
    accepted = [s for s in suites if accepts(s)]
    if accepted:
        newest = max(accepted, key=lambda s: s.python)
        suite = DEFAULT_SUITE if DEFAULT_SUITE in accepted else newest
        return PythonChoice(
            suite=suite,
            why=f"requires-python {wanted}" if wanted else "the default",
            requires_python=wanted,
            passed_over=tuple(passed_over),
        )
    there = ", ".join(s.describe() for s in suites)
    raise WrongPython(
        f"the project requires Python {wanted} and no sandbox image here has it (there are "
        f"{there}): build an image for another Python with `worker sandbox build --base IMAGE "
        "--image NAME` (docs/configuration.md) and pass --image NAME"
    )
