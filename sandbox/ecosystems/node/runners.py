"""A Node project's test command, run so that the test runner itself writes one outcome per test.

The command is package.json's `test` script (with `pretest` and `posttest` around it, as `npm
test` runs them, and `node_modules/.bin` first on PATH). Its commands are found by
sandbox/ecosystems/node/script.py; the first that runs a test runner we know gets the flags
that make the runner write a machine-readable report to a path we choose (random, under /tmp,
removed before the run), and nothing is installed into the project. The other commands (a
`tsc` or `tsd` after the tests, a lint before) run as written and count by exit code; a second
runner command counts by its exit code too.

| runner | flags added | report | narrowed to the files of test ids |
|---|---|---|---|
| vitest (1 to 4) | `--reporter=default --reporter=junit --outputFile.junit=R` | JUnit | yes |
| jest (ts-jest, babel-jest; react-scripts test) | `--json --outputFile=R` | jest's JSON | yes |
| mocha >= 9.1 | `--reporter json --reporter-option output=R` | mocha's JSON | yes |
| mocha < 9.1, if known | `--reporter xunit --reporter-option output=R` | xunit | yes |
| `node --test` (Node 18.17+) | spec to stdout, our reporter (staged outside) to R | JUnit | yes |
| ava | `--tap`, stdout to R, then shown | TAP | no: its titles change |
| tap (node-tap 12+) | `--output-file=R` | TAP | yes |
| tape (4, 5) | our reporter preloaded (NODE_OPTIONS --require), a pipe dropped | JUnit | yes |
| uvu (0.5) | our reporter preloaded (NODE_OPTIONS --require), `-b` dropped | JUnit | no |
| anything else (uvu, tape with NODE_OPTIONS of their own) | none | none: exit code only | no |

`node --test` gets a reporter of ours (worker_node_test_reporter.mjs) because Node's own junit
reporter names no test file before Node 24 and does not exist before Node 20. uvu has no
reporter at all: ours (worker_uvu_reporter.cjs) wraps its `suite` and `test` in the uvu CLI's
process and writes the report at exit, stamped with the run's token. tape's TAP names no file:
ours (worker_tape_reporter.cjs) watches each test tape queues in the tape CLI's process, notes
the test file that registered it, and writes the report the same way. Test names are
never narrowed to: the verdict reads ids from the report, so a run of whole files is exact.
"""

from __future__ import annotations

import json
import posixpath
import re
import secrets
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from sandbox.ecosystems.node import reports
from sandbox.ecosystems.node.ci_build import ci_node_build
from sandbox.ecosystems.node.script import Piece, expand, join
from sandbox.errors import SandboxUsageError
from sandbox.testrun.junit import TestSummary
from sandbox.worktree.repo_files import RepoFiles

Runner = Literal["vitest", "jest", "mocha", "node-test", "ava", "tap", "tape", "uvu", "other"]
#: What `npm init` writes: no tests at all.
NPM_DEFAULT_TEST = 'echo "Error: no test specified" && exit 1'
STAGE_VARIABLE = "WORKER_STAGE"  # the folder staged files are in, as the command sees it
TOKEN_VARIABLE = "WORKER_RUN_TOKEN"
NODE_REPORTER = "worker_node_test_reporter.mjs"
UVU_REPORTER = "worker_uvu_reporter.cjs"
UVU_REPORT_VARIABLE = "WORKER_UVU_REPORT"
TAPE_REPORTER = "worker_tape_reporter.cjs"
TAPE_REPORT_VARIABLE = "WORKER_TAPE_REPORT"
#: Runners that take a reporter of ours preloaded into their CLI's process (NODE_OPTIONS):
#: (the reporter, the variable that tells it where to write).
_PRELOADED: dict[str, tuple[str, str]] = {
    "uvu": (UVU_REPORTER, UVU_REPORT_VARIABLE),
    "tape": (TAPE_REPORTER, TAPE_REPORT_VARIABLE),
}
REPORT_FORMAT: dict[str, str] = {
    "vitest": "vitest-junit",
    "jest": "jest-json",
    "mocha": "mocha-json",
    "node-test": "node-test-junit",
    "ava": "ava-tap",
    "tap": "tap",
    "tape": "tape-junit",
    "uvu": "uvu-junit",
}
_BINS: dict[str, Runner] = {
    "vitest": "vitest",
    "jest": "jest",
    "mocha": "mocha",
    "_mocha": "mocha",
    "ava": "ava",
    "tap": "tap",
    "tape": "tape",
    "uvu": "uvu",
}
#: Programs that run the next command of their arguments: `nyc mocha`, `cross-env A=1 jest`.
_WRAPPERS = frozenset(
    {"npx", "pnpx", "bunx", "cross-env", "nyc", "c8", "env", "time", "dotenv", "exec", "yarn"}
    | {"pnpm", "npm", "nodemon", "with-env", "env-cmd", "dotenvx", "run", "node", "nodejs"}
    | {"tsx", "ts-node", "babel-node", "esno", "esr"}
)
_NODES = frozenset({"node", "nodejs", "tsx", "ts-node", "babel-node", "esno"})
#: Per runner, the options of a script that would fight ours (True: takes a value).
_CONFLICTS: dict[str, dict[str, bool]] = {
    "vitest": {"--reporter": True, "--outputFile": True, "--watch": False, "-w": False},
    "jest": {"--json": False, "--outputFile": True, "--watch": False, "--watchAll": False},
    "mocha": {
        **{"--reporter": True, "-R": True, "--reporter-option": True},
        **{"--reporter-options": True, "-O": True, "--watch": False, "-w": False},
    },
    "node-test": {"--test-reporter": True, "--test-reporter-destination": True, "--watch": False},
    "ava": {"--tap": False, "-t": False, "--watch": False, "-w": False},
    "tap": {"--output-file": True, "-o": True, "--watch": False, "-w": False},
    "tape": {},
    "uvu": {"--bail": False, "-b": False},  # a bail leaves the other tests unrun: errors
}
_NARROWS = frozenset({"vitest", "jest", "mocha", "node-test", "tap", "tape"})
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REPORT_PATH = re.compile(r"^/tmp/[A-Za-z0-9._-]+$")


class NoTestScript(SandboxUsageError):
    """package.json has no `test` script (or npm's placeholder): no way to tell how tests run."""


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """The test command to run, and where and in which format its runner writes the report."""

    command: str  # for /bin/sh in the workspace
    env: dict[str, str]
    report_path: str | None  # None: no per-test report, judged by exit code
    report_format: str  # a key of reports.PARSERS, "" with no report
    runner: Runner = "other"
    test_cmd: str = ""  # the test script as the project wrote it
    staged: Mapping[str, bytes] = field(default_factory=dict)  # name -> bytes, in $WORKER_STAGE
    token: str | None = None  # what the report must carry (node --test), None: nothing
    notes: tuple[str, ...] = ()  # what was left to the exit code, and why

    def parse(self, data: bytes, *, root: str = reports.WORKSPACE) -> TestSummary:
        """The report the run wrote; ValueError when it is not one of this format."""
        return reports.parse_report(self.report_format, data, root=root)


@dataclass(frozen=True, kw_only=True)
class NodeTestCommand:
    """A project's `test` script; `invocation` instruments it afresh for each run."""

    script: str
    scripts: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)  # runner -> installed version
    build: str = ""  # CI's build before its tests (ci_build.py), run first in every run

    @classmethod
    def of(cls, files: RepoFiles) -> NodeTestCommand:
        """From the repository's package.json (and the runners its node_modules holds, when
        set-up put them in the tree); NoTestScript when it has no test script."""
        scripts = package_scripts(files)
        test = scripts.get("test", "").strip()
        if not test or test == NPM_DEFAULT_TEST:
            raise NoTestScript(
                "package.json has no test script (npm's placeholder "
                "'no test specified' counts as none): pass --test-cmd"
            )
        found = ci_node_build(files, scripts)
        return cls(
            script=test,
            scripts=scripts,
            versions=installed_versions(files),
            build=found.command if found else "",
        )

    def invocation(self, test_ids: Sequence[str] = ()) -> Invocation:
        report = f"/tmp/worker-report-{secrets.token_hex(8)}"
        return node_invocation(
            self.script,
            report_path=report,
            test_ids=test_ids,
            scripts=self.scripts,
            versions=self.versions,
            build=self.build,
        )


def installed_versions(files: RepoFiles) -> dict[str, str]:
    """The version of each runner package whose flags depend on it (mocha's): the one in the
    tree's node_modules, else the lockfile's, else the newest package.json's range allows
    (`^8.2.1`: 8.x, the newest 8 is what an install without a lockfile gets). A set-up's
    node_modules is a link into its image, which the host does not read: without the last two,
    a project with no lockfile and mocha 8 (js-yaml) was given mocha 9.1's JSON flags, and its
    run had no report."""
    found: dict[str, str] = {}
    for package in ("mocha",):
        version = (
            _json_field(files.read(f"node_modules/{package}/package.json"), "version")
            or _locked_version(files, package)
            or _newest_in_range(_declared(files, package))
        )
        if version is not None:
            found[package] = version
    return found


def _json_field(text: str | None, *path: str) -> str | None:
    try:
        value: Any = json.loads(text) if text else None
    except ValueError:
        return None
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def _locked_version(files: RepoFiles, package: str) -> str | None:
    """`package`'s version in package-lock.json (v2/3 `packages`, v1 `dependencies`)."""
    text = files.read("package-lock.json") or files.read("npm-shrinkwrap.json")
    return _json_field(text, "packages", f"node_modules/{package}", "version") or _json_field(
        text, "dependencies", package, "version"
    )


def _declared(files: RepoFiles, package: str) -> str | None:
    text = files.read("package.json")
    return _json_field(text, "devDependencies", package) or _json_field(
        text, "dependencies", package
    )


def _newest_in_range(spec: str | None) -> str | None:
    """The newest version a simple range allows, as far as its numbers tell: `^8.2.1` and `8`
    are 8.x (given as "8.999.0"), `~9.0.3` is 9.0.x, `9.2.0` itself; None for anything else
    (`>=8`, `*`, a tag, a URL: the newest release, whatever it is).

    >>> [_newest_in_range(s) for s in ("^8.2.1", "~9.0.3", "9.2.0", "8.x", ">=8", "latest")]
    ['8.999.0', '9.0.999', '9.2.0', '8.999.0', None, None]
    """
    match = re.fullmatch(r"\s*([~^]?)(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?\s*", spec or "")
    if match is None:
        return None
    op, major, minor, patch = match.groups()
    if op == "^" or minor in (None, "x", "*"):
        return f"{major}.999.0" if int(major) > 0 or minor in (None, "x", "*") else None
    if op == "~" or patch in (None, "x", "*"):
        return f"{major}.{minor}.999"
    return f"{major}.{minor}.{patch}"


def package_scripts(files: RepoFiles) -> dict[str, str]:
    """package.json's `scripts` (strings only); {} when the file is absent, refused or not
    JSON (a note on `files` then)."""
    text = files.read("package.json")
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        files.notes.append(f"package.json: not valid JSON ({exc}); ignored")
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return {}
    return {k: v for k, v in scripts.items() if isinstance(k, str) and isinstance(v, str)}


def node_invocation(
    script: str,
    *,
    report_path: str,
    test_ids: Sequence[str] = (),
    scripts: Mapping[str, str] | None = None,
    versions: Mapping[str, str] | None = None,
    build: str = "",
) -> Invocation:
    """`script` (package.json's `test`, with `scripts` for `pretest`, `posttest` and the
    scripts it runs by name) instrumented to write its runner's report to `report_path`, and
    narrowed to the files of `test_ids` where its runner allows. `versions` (runner package to
    installed version): a mocha older than 9.1 writes xunit, having no JSON to a file. `build`:
    CI's build before its tests (`npm run build`), run first, the tests only once it passed."""
    if not _REPORT_PATH.match(report_path):
        raise ValueError(f"not a report path under /tmp: {report_path!r}")
    scripts = dict(scripts or {})
    steps = [s for s in (build, scripts.get("pretest"), script, scripts.get("posttest")) if s]
    pieces = expand(" && ".join(f"( {s} )" for s in steps), scripts)
    files = _files_of(test_ids)
    runner: Runner = "other"
    notes: list[str] = []
    reported = True
    for k, piece in enumerate(pieces):
        if piece.operator:
            continue
        found = _find_runner(piece.text)
        if found is None:
            continue
        if runner != "other":
            notes.append(f"a second test runner command counts by its exit code: {piece.text}")
            continue
        runner = found[0]
        if runner in _PRELOADED and "NODE_OPTIONS" in piece.text:
            notes.append(
                f"{runner} with NODE_OPTIONS of its own takes no reporter: judged by exit code"
            )
            reported = False
            break
        _drop_formatter(pieces, k, notes)
        xunit = runner == "mocha" and _older((versions or {}).get("mocha"), (9, 1))
        pieces[k] = Piece(_instrument(piece.text, found, report_path, files, notes, xunit=xunit))
    if runner == "other":
        notes.append("no test runner we know in the test script: judged by exit code")
    fmt = REPORT_FORMAT.get(runner, "")
    if runner == "mocha" and _older((versions or {}).get("mocha"), (9, 1)):
        fmt = "mocha-xunit"
    if files and runner not in _NARROWS:
        notes.append(f"{runner} runs are not narrowed to files: the whole suite runs")
    reported = reported and runner in REPORT_FORMAT
    fmt = fmt if reported else ""
    prelude = [f"rm -f {report_path}"] if reported else []
    prelude += ['export PATH="$PWD/node_modules/.bin:$PATH"', 'export WORKER_TEST_ROOT="$PWD"']
    stamped = reported and (runner == "node-test" or runner in _PRELOADED)
    token = secrets.token_hex(16) if stamped else None
    env = {TOKEN_VARIABLE: token} if token else {}
    staged = {NODE_REPORTER: _staged(NODE_REPORTER)} if runner == "node-test" else {}
    if runner in _PRELOADED and reported:
        reporter, variable = _PRELOADED[runner]
        env[variable] = report_path
        staged = {reporter: _staged(reporter)}
    return Invocation(
        command="; ".join([*prelude, join(pieces)]),
        env=env,
        report_path=report_path if reported else None,
        report_format=fmt,
        runner=runner,
        test_cmd=script,
        staged=staged,
        token=token,
        notes=tuple(notes),
    )


def detect_runner(script: str, scripts: Mapping[str, str] | None = None) -> Runner:
    """Which runner `script` runs first ("other" when none we know)."""
    for piece in expand(script, dict(scripts or {})):
        found = None if piece.operator else _find_runner(piece.text)
        if found is not None:
            return found[0]
    return "other"


# -- one command ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    value: str  # unquoted


def _words(text: str) -> list[_Word]:
    """The words of a simple command with where each is in `text` (quotes kept there)."""
    out: list[_Word] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        start, value, quote = i, [], ""
        while i < n and (quote or text[i] not in " \t"):
            c = text[i]
            if quote:
                if c == quote:
                    quote = ""
                elif c == "\\" and quote == '"' and i + 1 < n and text[i + 1] in '"\\$`':
                    i += 1
                    value.append(text[i])
                else:
                    value.append(c)
            elif c in "'\"":
                quote = c
            elif c == "\\" and i + 1 < n:
                i += 1
                value.append(text[i])
            else:
                value.append(c)
            i += 1
        out.append(_Word(start, i, "".join(value)))
    return out


def _find_runner(text: str) -> tuple[Runner, int, int] | None:
    """(runner, index of its word, index of the word our flags go after) in one command."""
    ws = [w.value for w in _words(text)]
    i = 0
    while i < len(ws) and _ENV_ASSIGNMENT.match(ws[i]):
        i += 1
    after_option = False
    while i < len(ws):
        word = ws[i]
        name = posixpath.basename(word)
        runner = _runner_of_path(word)
        if runner is not None:
            return runner, i, i
        if name in _NODES:
            test = _node_test_flag(ws, i)
            if test is not None:
                return "node-test", i, test
        if name == "react-scripts" and ws[i + 1 : i + 2] == ["test"]:
            return "jest", i, i + 1
        if name in _WRAPPERS or _ENV_ASSIGNMENT.match(word):
            after_option = False
        elif word.startswith("-"):
            after_option = "=" not in word
        elif after_option:
            after_option = False  # the value of a wrapper's option: `c8 --reporter lcov mocha`
        else:
            return None
        i += 1
    return None


def _runner_of_path(word: str) -> Runner | None:
    """The runner `word` runs: a bin name (`jest`, `node_modules/.bin/jest`) or a package's
    own script (`node_modules/jest/bin/jest.js`)."""
    if word.startswith("-"):
        return None
    name = posixpath.basename(word)
    if name in _BINS:
        return _BINS[name]
    match = re.search(r"(?:^|/)node_modules/(vitest|jest|jest-cli|mocha|ava|tap|tape|uvu)/", word)
    if match:
        return _BINS.get(match.group(1).removesuffix("-cli"))
    return None


def _node_test_flag(ws: list[str], i: int) -> int | None:
    """The index of `--test` among `node`'s own options (before its script), if there."""
    for j in range(i + 1, len(ws)):
        if ws[j] == "--test":
            return j
        if not ws[j].startswith("-"):
            return None
    return None


def _instrument(
    text: str,
    found: tuple[Runner, int, int],
    report: str,
    files: list[str],
    notes: list[str],
    *,
    xunit: bool = False,
) -> str:
    runner, at, after = found
    words = _words(text)
    cut = _conflicting(words[at + 1 :], _CONFLICTS[runner])
    if cut:
        notes.append(f"options of the test script replaced: {' '.join(w.value for w in cut)}")
    if files and runner in _NARROWS:
        cut += [w for w in words[after + 1 :] if w not in cut and _holds(w.value, files)]
    flags = {
        "vitest": f"--reporter=default --reporter=junit --outputFile.junit={report}",
        "jest": f"--json --outputFile={report}",
        "mocha": f"--reporter {'xunit' if xunit else 'json'} --reporter-option output={report}",
        "node-test": (
            "--test-reporter=spec --test-reporter-destination=stdout "
            f'--test-reporter="${STAGE_VARIABLE}/{NODE_REPORTER}" '
            f"--test-reporter-destination={report}"
        ),
        "ava": "--tap",
        "tap": f"--output-file={report}",
        "tape": "",
        "uvu": "",
    }[runner]
    at_end = runner in ("vitest", "ava", "tap")
    insert = len(text.rstrip()) if at_end else words[after].end
    out = text[:insert] + (f" {flags}" if flags else "") + text[insert:]
    shift = len(flags) + 1 if flags else 0
    for word in sorted(cut, key=lambda w: w.start, reverse=True):
        moved = shift if word.start >= insert else 0
        out = out[: word.start + moved] + out[word.end + moved :]
    out = re.sub(r"[ \t]+", " ", out).strip()
    if files and runner in _NARROWS:
        quoted = [shlex.quote(_jest_pattern(f) if runner == "jest" else f) for f in files]
        out += " " + " ".join(quoted)
    if runner in _PRELOADED:
        # Our reporter, preloaded into the runner's process (inert in any other node it starts).
        preload = f"--require=${STAGE_VARIABLE}/{_PRELOADED[runner][0]}"
        out = f'NODE_OPTIONS="{preload}${{NODE_OPTIONS:+ $NODE_OPTIONS}}" {out}'
    if runner == "ava":
        # The TAP stream is the runner's stdout: kept whole in the report, shown after it.
        out = f"( {out} > {report}; rc=$?; cat {report}; exit $rc )"
    return out


def _conflicting(words: Sequence[_Word], options: Mapping[str, bool]) -> list[_Word]:
    cut: list[_Word] = []
    skip_next = False
    for word in words:
        if skip_next:
            cut.append(word)
            skip_next = False
            continue
        name, eq, _ = word.value.partition("=")
        base = next((o for o in options if name == o or name.startswith(o + ".")), None)
        if base is not None:
            cut.append(word)
            skip_next = options[base] and not eq
    return cut


def _drop_formatter(pieces: list[Piece], k: int, notes: list[str]) -> None:
    """Drop what the runner's output is piped into (`tape test/*.js | tap-spec`): the report
    is the runner's own, and its exit code the command's."""
    end = k + 1
    while end + 1 < len(pieces) and pieces[end].text == "|":
        end += 2
    if end > k + 1:
        dropped = join(pieces[k + 1 : end])
        notes.append(f"the test runner's output is not piped on ({dropped})")
        del pieces[k + 1 : end]


def _older(version: str | None, than: tuple[int, int]) -> bool:
    """`version` ("9.0.3") is known and older than `than`."""
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return match is not None and (int(match.group(1)), int(match.group(2))) < than


def _files_of(test_ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(t.partition("::")[0] for t in test_ids if t.partition("::")[0]))


def _holds(word: str, files: Sequence[str]) -> bool:
    """`word` (a path or glob of the script) names every file of `files`: it can go."""
    if word.startswith("-") or not word or "=" in word:
        return False
    pattern = _glob_regex(word.removeprefix("./").rstrip("/"))
    folder = word.removeprefix("./").rstrip("/") + "/"
    return all(f.startswith(folder) or pattern.fullmatch(f) for f in files)


def _glob_regex(glob: str) -> re.Pattern[str]:
    parts = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            parts.append(".*")
            i += 2
        elif glob[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            parts.append("[^/]")
            i += 1
        elif glob[i] == "{" and "}" in glob[i:]:  # `{js,mjs}`: one of them
            end = glob.index("}", i)
            parts.append("(?:" + "|".join(map(re.escape, glob[i + 1 : end].split(","))) + ")")
            i = end + 1
        else:
            parts.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(parts))


def _jest_pattern(path: str) -> str:
    """A file path as jest's positional argument, which is a regular expression."""
    return re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", path)


def _staged(name: str) -> bytes:
    """One of our reporters, staged beside the sandbox's control files for the run."""
    return resources.files("sandbox.ecosystems.node").joinpath(name).read_bytes()
