"""Infer the dependency set-up a Python developer would run on a fresh clone of a repository.

Used when `worker fix` gets no `--setup`. Everything is read, never executed: pyproject.toml,
setup.cfg, setup.py's presence, requirement files, tox.ini and lock files (`setup_locks`), then
what the CI's test jobs pip-install beyond them (`ci_install`). The
repository is hostile input (read through sandbox/worktree/repo_files.py: symlinks are never
followed,
files over 1 MB are not read, a malformed file becomes a note, never an error), and includes nest
at most 8 deep.
"""

from __future__ import annotations

import configparser
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from sandbox.ecosystems.python.ci_build import ci_build_steps
from sandbox.ecosystems.python.ci_install import ci_requirements
from sandbox.ecosystems.python.installer import PIP as PIP_INSTALLER
from sandbox.ecosystems.python.nox_session import nox_test_session
from sandbox.ecosystems.python.setup_locks import lock_plan, normalize, table, wanted_names
from sandbox.setup.plan import SetupPlan
from sandbox.worktree.repo_files import RepoFiles, requires_python

MAX_DEPTH = 8
PIP = "python -m pip install"
REQUIREMENT_FILES = (
    *("requirements-test*.txt", "requirements_test*.txt", "requirements/test*.txt"),
    *("requirements/tests*.txt", "test-requirements.txt", "test_requirements.txt"),
    *("requirements-dev.txt", "requirements_dev.txt", "requirements/dev*.txt"),
    *("dev-requirements.txt", "tests/requirements.txt"),
)
TOX_FACTORS_KEPT = ("py", "py3", "py311")
INDEX_OPTIONS = {"-i", "--index-url", "--extra-index-url", "--trusted-host", "--no-index"}
INDEX_OPTIONS |= {"-f", "--find-links"}
_OPTION = re.compile(r"(-[A-Za-z]|--[\w-]+)(?:\s*=\s*|\s+)?(.*)")
_PROJECT = re.compile(r"\./?(\[[^\]]*\])?")  # `.` or `.[test]`: the project itself
_VCS = re.compile(r"(^|@\s*)(git|hg|svn|bzr)\+", re.IGNORECASE)
_TOX_FACTOR = re.compile(r"([\w!][\w{},.!-]*):(?!//)\s*(.*)")
_COMMENT = re.compile(r"(^|\s)#.*")


@dataclass
class _Args:
    """pip arguments, unquoted; `clean` when the file they came from can go to pip as it is."""

    args: list[str] = field(default_factory=list)
    project: bool = False  # the project itself is among them
    clean: bool = True
    hashed: bool = False  # pip will be in hash-checking mode, which refuses `-e .` beside them
    line_hashes: bool = False  # some lines have hashes; they count only if the file goes as is

    def add(self, other: _Args) -> _Args:
        self.args += other.args
        self.project |= other.project
        self.clean &= other.clean
        self.hashed |= other.hashed
        self.line_hashes |= other.line_hashes
        return self


class _Tree(RepoFiles):
    """The repository's files, read as pip would take them; collects notes."""

    def skip(self, where: str, line: str, why: str) -> _Args:
        self.notes.append(f"{where}: not followed ({why}): {line}")
        return _Args(clean=False)

    def req_file(self, rel: str, *, stack: tuple[str, ...] = ()) -> _Args | None:
        """A requirements file as `-r FILE`, or as its lines spelled out when some are left out;
        None when it cannot be read."""
        text = self.read(rel)
        if text is None:
            return None
        out = _Args()
        for raw in re.sub(r"\\\r?\n", "", text).splitlines():
            if line := _COMMENT.sub("", raw).strip():
                out.add(self.req_line(line, rel, base=posixpath.dirname(rel), stack=(*stack, rel)))
        if not out.clean:
            out.line_hashes = False
            return out
        hashed = out.hashed or out.line_hashes
        return _Args(args=["-r", rel], project=out.project, hashed=hashed)

    def req_line(self, line: str, where: str, *, base: str, stack: tuple[str, ...]) -> _Args:
        """One requirements-file line as pip arguments (per-requirement --hash options dropped)."""
        option = _OPTION.fullmatch(line) if line.startswith("-") else None
        if option is None:
            requirement = re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]
            found = self.requirement(requirement, where)
            found.line_hashes = "--hash" in line
            return found
        opt, value = option.group(1), option.group(2).strip()
        if opt in ("-e", "--editable"):
            return self.requirement(value, where, editable=True)
        if opt in INDEX_OPTIONS:
            return self.skip(where, line, "an index option")
        if opt not in ("-r", "--requirement", "-c", "--constraint"):
            # --pre, --only-binary ...: harmless on pip's command line; hashes are dropped there
            if opt == "--require-hashes":
                return _Args(line_hashes=True)
            return _Args(args=[opt, value] if value else [opt])
        rel = None if "://" in value else self.inside(value, base)
        if rel is None:
            return self.skip(where, line, "an include outside the tree")
        if rel in stack or len(stack) > MAX_DEPTH:
            return self.skip(where, line, "an include cycle, or nested too deep")
        sub = self.req_file(rel, stack=stack)
        if sub is None:
            return self.skip(where, line, "a missing or unreadable include")
        if opt in ("-r", "--requirement"):
            return sub
        if sub.clean:
            return _Args(args=["-c", rel], hashed=sub.hashed)
        return self.skip(where, line, "constraints with lines not followed")

    def requirement(self, token: str, where: str, *, editable: bool = False) -> _Args:
        """A requirement or path as pip arguments, unless it is a VCS URL or leaves the tree."""
        token = token.strip()
        shown = f"-e {token}" if editable else token
        if _VCS.search(token):
            return self.skip(where, shown, "a VCS URL")
        if _PROJECT.fullmatch(token):
            if not editable:
                self.notes.append(f"{where}: {token} installed editable (-e), as tests import it")
            return _Args(args=["-e", token], project=True, clean=editable)
        path = _local_path(token)
        if path is not None and self.inside(path) is None:
            return self.skip(where, shown, "a path outside the tree")
        return _Args(args=["-e", token] if editable else [token])

    def group(self, groups: dict[str, Any], name: str, stack: tuple[str, ...] = ()) -> _Args:
        """A PEP 735 dependency group's requirements, its included groups resolved."""
        where = f"pyproject.toml [dependency-groups] {name}"
        keys = {normalize(k): k for k in groups}
        entries = groups.get(keys.get(normalize(name), ""))
        if not isinstance(entries, list) or len(stack) > MAX_DEPTH:
            return self.skip(where, name, "not a list of requirements, or nested too deep")
        out = _Args()
        for entry in entries:
            include = entry.get("include-group") if isinstance(entry, dict) else None
            if isinstance(entry, str):
                out.add(self.requirement(entry, where))
            elif isinstance(include, str) and normalize(include) not in stack:
                out.add(self.group(groups, include, (*stack, normalize(name))))
            else:
                self.skip(where, str(entry), "an include cycle or an unsupported entry")
        return out

    def tox(self, installable: bool) -> tuple[_Args, str] | None:
        """tox.ini [testenv]'s deps and extras as pip arguments."""
        cfg = self.ini("tox.ini")
        if cfg is None or not cfg.has_section("testenv"):
            return None
        out, where = _Args(), "tox.ini [testenv]"
        for line in self.tox_deps(cfg, cfg.get("testenv", "deps", fallback="")):
            out.add(self.req_line(line, f"{where} deps", base="", stack=("tox.ini",)))
        extras = ",".join(re.split(r"[,\s]+", cfg.get("testenv", "extras", fallback="").strip()))
        if extras and installable:
            out.add(_Args(args=["-e", f".[{extras}]"], project=True))
        elif extras:
            self.skip(where, f"extras = {extras}", "the project is not installable")
        return (out, f"{where} deps" + (" and extras" if extras else "")) if out.args else None

    def tox_deps(self, cfg: configparser.ConfigParser, deps: str, depth: int = 0) -> list[str]:
        """tox deps lines: {toxinidir} and {[section]key} resolved, factor-conditional lines
        kept only for py/py3/py311, lines with any other substitution left out."""
        where, kept = "tox.ini [testenv] deps", []
        for raw in deps.splitlines():
            line = _COMMENT.sub("", raw).strip()
            ref = re.fullmatch(r"\{\[([^\]]+)\]([^}]+)\}", line)
            factor = _TOX_FACTOR.fullmatch(line)
            if ref and cfg.has_option(ref[1], ref[2]) and depth < MAX_DEPTH:
                kept += self.tox_deps(cfg, cfg.get(ref[1], ref[2]), depth + 1)
                continue
            if factor and factor[1].lower() not in ("file", "http", "https"):
                if factor[1] not in TOX_FACTORS_KEPT:
                    self.skip(where, line, f"conditional on tox factor {factor[1]}")
                    continue
                line = factor[2]
            line = line.replace("{toxinidir}", ".")
            if "{" in line:
                self.skip(where, line, "a substitution worker does not resolve")
            elif line:
                kept.append(line)
        return kept


def _local_path(token: str) -> str | None:
    """The filesystem path a requirement names (`/` for a file:// URL), None for a name or URL."""
    token = re.sub(r"^[^@/:]+@\s*", "", token.split(";")[0].strip())
    if token.startswith("file:"):
        return "/" if token.startswith("file://") else token[5:]
    if "://" in token or not (token.startswith((".", "/", "~")) or "/" in token or "\\" in token):
        return None
    return re.sub(r"\[[^\]]*\]$", "", token)


def _requirement_files(tree: _Tree) -> list[str]:
    """Existing test/dev requirement files, in REQUIREMENT_FILES order (shortest name first)."""
    found: list[str] = []
    for pattern in REQUIREMENT_FILES:
        folder, _, name = pattern.rpartition("/")
        names = tree.listed(folder)
        for n in sorted((n for n in names if fnmatchcase(n, name)), key=lambda n: (len(n), n)):
            rel = posixpath.join(folder, n)
            if rel not in found and tree.exists(rel):
                found.append(rel)
    return found


def _test_source(
    tree: _Tree, pyproject: dict[str, Any], cfg: configparser.ConfigParser | None, installable: bool
) -> tuple[_Args, str] | None:
    """What the tests need, from the first source that gives anything (rule 2's order)."""
    groups = table(pyproject, "dependency-groups")
    if (names := wanted_names(*groups)) and (found := tree.group(groups, names[0])).args:
        return found, f"pyproject.toml [dependency-groups] {names[0]}"
    extras = wanted_names(*table(pyproject, "project", "optional-dependencies"))
    if installable and extras:
        args = _Args(args=["-e", f".[{extras[0]}]"], project=True)
        return args, f"pyproject.toml [project.optional-dependencies] {extras[0]}"
    for rel in _requirement_files(tree):
        if (from_file := tree.req_file(rel)) is not None and from_file.args:
            return from_file, rel
    if from_tox := tree.tox(installable):
        return from_tox
    has_extras = cfg is not None and cfg.has_section("options.extras_require")
    extras = wanted_names(*(cfg["options.extras_require"] if cfg and has_extras else {}))
    if installable and extras:
        args = _Args(args=["-e", f".[{extras[0]}]"], project=True)
        return args, f"setup.cfg [options.extras_require] {extras[0]}"
    if not installable and (from_file := tree.req_file("requirements.txt")) and from_file.args:
        return from_file, "requirements.txt"
    return None


def _installable_from(
    tree: _Tree, pyproject: dict[str, Any] | None, cfg: configparser.ConfigParser | None
) -> str | None:
    """What makes the project an installable package (rule 1), None when it is not one."""
    if table(pyproject or {}, "tool", "uv").get("package") is False or (
        table(pyproject or {}, "tool", "poetry").get("package-mode") is False
    ):
        tree.notes.append("pyproject.toml: declares itself not a package; not installed")
        return None
    if pyproject is not None and isinstance(pyproject.get("build-system"), dict):
        return "pyproject.toml [build-system]"
    if table(pyproject or {}, "project"):
        return "pyproject.toml [project]"
    if tree.exists("setup.py"):
        return "setup.py"
    if cfg is not None and cfg.has_option("metadata", "name"):
        return "setup.cfg [metadata]"
    return None


def infer_setup(repo: Path) -> SetupPlan:
    """The set-up command for `repo`, read from its files (nothing in it is run)."""
    tree = _Tree(repo)
    pyproject = tree.toml("pyproject.toml")
    cfg = tree.ini("setup.cfg")
    installable_from = _installable_from(tree, pyproject, cfg)
    found = _test_source(tree, pyproject or {}, cfg, installable_from is not None)
    args, sources = (found[0], [found[1]]) if found else (_Args(), [])
    command = f"{PIP} {shlex.join(args.args)}" if args.args else None
    if installable_from and not args.project:
        sources.insert(0, installable_from)
        if args.hashed:  # pip refuses `-e .` in hash-checking mode: a second run for it
            command = f"{command} && {PIP} -e ."
        else:
            command = f"{PIP} {shlex.join(['-e', '.', *args.args])}"

    lock = None
    if pyproject is not None:
        installable = bool(installable_from)
        uv_toml = tree.toml("uv.toml")
        lock = lock_plan(
            root=tree.root, pyproject=pyproject, installable=installable, uv_toml=uv_toml
        )
    locks = [n for n in ("uv.lock", "poetry.lock", "pdm.lock") if tree.exists(n)]
    if lock is None and locks:
        tree.notes.append(f"{locks[0]}: not used (no readable pyproject.toml beside it)")
    summary = None
    if lock is not None:
        also = f"; should that fail, {' and '.join(sources)} with pip" if command else ""
        tool = lock.tool
        summary = (
            f"installs the {lock.source} locked groups (exported by {tool.name} {tool.version}, "
            f"{tool.why}, from its cached layer; then pip{also})"
        )
        fallback = f" || ( {command} )" if command else ""
        command = f"( {lock.command} ){fallback}" if fallback else lock.command
        sources.insert(0, lock.source)
    build = ci_build_steps(tree)
    ci = ci_requirements(tree)
    if ci is not None:
        sources.append(f"CI's pip install ({', '.join(ci.sources)})")
        if ci.left_out:
            tree.notes.append(f"CI's pip install: {', '.join(ci.left_out)} (CI's own tools)")
    extra = list(ci.requirements) if ci is not None else []
    if (nox := nox_test_session(tree)) is not None and nox.requirements:
        named = {_name(a) for a in args.args} | {_name(r) for r in extra}
        if new := [r for r in nox.requirements if _name(r) not in named]:
            extra += new
            sources.append(f"noxfile.py session {nox.name} (line {nox.line})")
        if nox.left_out:
            tree.notes.append(f"noxfile.py's installs: {', '.join(nox.left_out)} (CI's own tools)")
    ci_pip = f"{PIP} {shlex.join(extra)}" if extra else None
    if build is not None and lock is None and installable_from and not args.hashed:
        # CI's build steps (`make cython`) come before the project's own install, as in CI.
        head = [f"{PIP} {shlex.join(args.args)}"] if args.args else []
        steps = [*head, *([ci_pip] if ci_pip else []), *build.steps, f"{PIP} -e ."]
        command = " && ".join(steps)
        sources.append(f"CI's build steps {', '.join(build.steps)} ({', '.join(build.sources)})")
    else:
        if build is not None:
            tree.notes.append(
                f"CI's build steps {', '.join(build.steps)} ({', '.join(build.sources)}): not "
                "run (set-up installs a lock file, or the project is not installable)"
            )
        if ci_pip is not None:
            command = f"{command} && {ci_pip}" if command else ci_pip
            if summary is not None:
                summary += f"; then {ci_pip} as CI does"
    return SetupPlan(
        command=command,
        sources=tuple(sources),
        notes=tuple(tree.notes),
        requires_python=requires_python(pyproject, cfg),
        summary=summary,
        installer=PIP_INSTALLER,
        tool=lock.tool if lock is not None else None,
    )


def _name(requirement: str) -> str:
    """A requirement's project name, normalized: `Mypy[x]>=1` is mypy."""
    return normalize(re.split(r"[\[<>=!~;\s@]", requirement.strip(), maxsplit=1)[0])
