r"""The jobs of a repository's CI, whichever service runs it: each job's shell lines in the
order CI runs them, with the file and line each comes from, and the services it starts.

Two services are read, as hostile text through RepoFiles, line by line (no YAML loader, as in
workflows.py): GitHub Actions (`.github/workflows/*.yml`: each job's `run:` lines) and GitLab
CI (`.gitlab-ci.yml`: each job's `before_script:` then `script:`, the `default:` or top-level
`before_script:` when the job has none, a hidden job's (`.base`) when the job `extends:` it;
the repository files it `include:`s (gitlab_include.py; another project's or host's are a
note); `!reference` tags are not followed). Each job keeps
the environment CI gives its lines (ci_env.py: GitHub's `env:` blocks, GitLab's `variables:`).
Readers of what CI does (installs, build steps, the test command, its environment, services)
take their lines from here, so a project tested on GitLab is read as one tested on GitHub.

>>> job = gitlab_jobs(".gitlab-ci.yml", "test:\n  script:\n    - pytest -x\n")[0]
>>> job.name, job.lines
('test', ((3, 'pytest -x'),))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox.worktree.ci_env import EnvEntry, github_env, mapping_entries
from sandbox.worktree.gitlab_include import GITLAB, gitlab_document, top_level_blocks
from sandbox.worktree.repo_files import RepoFiles
from sandbox.worktree.workflows import (
    key_values,
    run_lines,
    strip_comment,
    unquote,
    workflow_jobs,
    workflow_services,
    workflow_texts,
)

#: Top-level keys of a .gitlab-ci.yml that are not jobs.
GITLAB_KEYWORDS = frozenset(
    {"stages", "variables", "default", "include", "workflow", "image", "services"}
    | {"before_script", "after_script", "cache", "spec"}
)
MAX_LINES = 400  # of one job's script


@dataclass(frozen=True)
class CiJob:
    """One CI job: the file it is in, its name, its shell lines (line number, text) in the
    order they run, the services it starts (name, line number) and the variables CI sets
    for its lines (each with the lines of the file it covers)."""

    source: str
    name: str
    lines: tuple[tuple[int, str], ...]
    services: tuple[tuple[str, int], ...] = ()
    env: tuple[EnvEntry, ...] = ()
    #: Where each line of a document made of several files comes from (gitlab_include.py).
    origins: tuple[tuple[str, int], ...] = ()

    def where(self, line_no: int) -> str:
        """`file:line` of one of its lines."""
        if 0 < line_no <= len(self.origins):
            rel, n = self.origins[line_no - 1]
            return f"{rel}:{n}"
        return f"{self.source}:{line_no}"

    def env_at(self, line_no: int) -> dict[str, EnvEntry]:
        """The variables CI sets for the line `line_no`: the workflow's, then the job's, then
        the step's, a narrower one winning over a wider one of the same name."""
        covering = [e for e in self.env if e.first <= line_no <= e.last]
        covering.sort(key=lambda e: e.first - e.last)  # widest first; stable within a width
        return {e.name: e for e in covering}


def ci_jobs(files: RepoFiles) -> list[CiJob]:
    """Every job of the repository's GitHub workflows (by file name), then of its GitLab CI."""
    jobs: list[CiJob] = []
    for rel, text in workflow_texts(files):
        jobs += github_jobs(rel, text)
    if (gitlab := gitlab_document(files)) is not None:
        jobs += gitlab_jobs(GITLAB, gitlab.text, origins=gitlab.origins)
    return jobs


def github_jobs(rel: str, text: str) -> list[CiJob]:
    """A workflow's jobs, each with the `run:` lines and services inside it."""
    lines = run_lines(text)
    services = workflow_services(text)
    env = github_env(text)
    return [
        CiJob(
            source=rel,
            name=name,
            lines=tuple((n, line) for n, line in lines if first <= n <= last),
            services=tuple((s, n) for s, n in services if first <= n <= last),
            env=tuple(e for e in env if e.first <= last and e.last >= first),
        )
        for name, first, last in workflow_jobs(text)
    ]


def gitlab_jobs(rel: str, text: str, *, origins: tuple[tuple[str, int], ...] = ()) -> list[CiJob]:
    """A .gitlab-ci.yml's jobs (its top-level keys that are neither keywords nor hidden);
    `origins`: where each line of `text` comes from, when it is several files'."""
    lines = text.splitlines()
    blocks = top_level_blocks(lines)
    keys = {name: _children(lines, first, last) for name, first, last in blocks}
    default = keys.get("default", {})
    top_before = _sequence(lines, blocks_line(blocks, "before_script"))
    top_env = _variables(lines, blocks_line(blocks, "variables"))
    jobs = []
    for name, _first, _last in blocks:
        if name in GITLAB_KEYWORDS or name.startswith("."):
            continue
        own = keys[name]
        bases = [b for b in _extends(lines, own.get("extends")) if b in keys]

        def part(key: str, own: dict[str, int] = own, bases: list[str] = bases) -> list:
            for where in (own, *(keys[b] for b in bases)):
                if key in where:
                    return _sequence(lines, where[key])
            return []

        before = part("before_script")
        if not before and "before_script" not in own:
            before = _sequence(lines, default.get("before_script")) or top_before
        script = part("script")
        if not script:
            continue  # a job with no script (a trigger, a bridge) runs nothing here
        services = [
            (unquote(item.split("name:", 1)[-1]), n) for n, item in part("services") if item
        ]
        env = top_env + [
            e for b in (*bases, name) for e in _variables(lines, keys[b].get("variables"))
        ]
        jobs.append(
            CiJob(
                rel,
                name,
                tuple((before + script)[:MAX_LINES]),
                tuple(services),
                tuple(env),
                origins,
            )
        )
    return jobs


def _variables(lines: list[str], line_no: int | None) -> list[EnvEntry]:
    """A `variables:` block's entries, each covering the whole file (a job's own are read
    after the file's, so they win)."""
    if line_no is None:
        return []
    head = lines[line_no - 1]
    indent = len(head) - len(head.lstrip())
    return [
        EnvEntry(name, value, n, 1, len(lines), why)
        for name, value, n, why in mapping_entries(lines, line_no, indent)
    ]


def gitlab_image_versions(files: RepoFiles, *names: str) -> list[str]:
    """The versions of the images named `names` that .gitlab-ci.yml's jobs run in
    (`image: python:3.12-slim` is 3.12; `image: node:$NODE` takes the values a `NODE:`
    variable or `parallel: matrix:` entry gives), in the order written, once each."""
    document = gitlab_document(files)
    if document is None:
        return []
    text = document.text
    out: list[str] = []
    for ref in key_values(text, "image") + _image_names(text):
        name, _, tag = ref.rpartition("/")[2].partition(":")
        if name not in names or not tag:
            continue
        variable = re.fullmatch(r"\$\{?(\w+)\}?(.*)", tag)
        tags = [v + variable[2] for v in key_values(text, variable[1])] if variable else [tag]
        for one in tags:
            version = re.match(r"v?(\d+(?:\.\d+)*)", one)
            if version and version[1] not in out:
                out.append(version[1])
    return out


def _image_names(text: str) -> list[str]:
    """`name:` values of `image:` mappings (`image:\n  name: python:3.12`)."""
    lines = text.splitlines()
    out = []
    for n, line in enumerate(lines[:-1]):
        if re.fullmatch(r"\s*image\s*:\s*", strip_comment(line)):
            found = re.fullmatch(r"\s*name\s*:\s*(\S+)\s*", strip_comment(lines[n + 1]))
            if found:
                out.append(unquote(found[1]))
    return out


def blocks_line(blocks: list[tuple[str, int, int]], key: str) -> int | None:
    """The line number of a top-level key, None when there is none."""
    return next((first for name, first, _last in blocks if name == key), None)


def _children(lines: list[str], first: int, last: int) -> dict[str, int]:
    """A block's keys one level in, each with its line number."""
    out: dict[str, int] = {}
    indent = None
    for n in range(first + 1, last + 1):
        bare = strip_comment(lines[n - 1])
        if not bare.strip():
            continue
        depth = len(bare) - len(bare.lstrip())
        indent = depth if indent is None else indent
        key = re.fullmatch(r"\s*([\w-]+)\s*:(?:\s.*)?", bare)
        if depth == indent and key:
            out.setdefault(key[1], n)
    return out


def _extends(lines: list[str], line_no: int | None) -> list[str]:
    """The names an `extends:` gives (one, or a list)."""
    return [item for _n, item in _sequence(lines, line_no)]


def _sequence(lines: list[str], line_no: int | None) -> list[tuple[int, str]]:
    """The items of the key on line `line_no`: its inline value (a scalar or a `[a, b]` list),
    or its block list, each `- |` item's lines one by one; a line ending in a backslash is
    joined with the next. Each item with the number of the line it starts on."""
    if line_no is None:
        return []
    head = strip_comment(lines[line_no - 1])
    indent = len(head) - len(head.lstrip())
    value = head.split(":", 1)[1].strip() if ":" in head else ""
    if value.startswith("["):
        return [(line_no, unquote(v)) for v in value[1:].split("]", 1)[0].split(",") if v.strip()]
    if value and value[0] not in "|>":
        return [(line_no, unquote(value))]
    out: list[tuple[int, str]] = []
    held, start, block, folded, block_start = "", 0, None, False, 0
    for n in range(line_no + 1, min(len(lines), line_no + MAX_LINES) + 1):
        raw = lines[n - 1]
        if not raw.strip():
            continue
        depth = len(raw) - len(raw.lstrip())
        if depth <= indent and not (raw.lstrip().startswith("- ") and depth == indent):
            break
        bare = raw.strip()
        if block is not None and depth > block:
            item = bare  # a line of a `- |` block; a `- >` block's lines are one line
            if folded and out and start == 0 and out[-1][0] >= block_start:
                out[-1] = (out[-1][0], f"{out[-1][1]} {item}")
                continue
        elif bare.startswith("- ") or bare == "-":
            block = None
            item = bare[1:].strip()
            if item in ("|", ">", "|-", ">-", "|+", ">+"):
                block, folded, block_start = depth, item.startswith(">"), n + 1
                continue
            if item.startswith("!reference"):
                continue
            item = unquote(strip_comment(item))
        elif value and value[0] in "|>":
            item = bare  # the key's own `script: |` block
        else:
            continue
        if not item or (item.startswith("#") and not held):
            continue
        start = start or n
        if item.endswith("\\"):
            held += item[:-1].rstrip() + " "
            continue
        out.append((start, held + item))
        held, start = "", 0
    return out
