"""`apply_patch {patch}`: a unified diff over one or more files, applied all-or-nothing.

Every path is checked with the write policy before anything runs. `git apply` does the work inside
the sandbox (so files belong to the sandbox user): `--check` first, exact, then tolerating
trailing-whitespace differences (`--whitespace=fix`). Before that, a hunk that matches nowhere
may be shifted (patch_reindent.py) or realigned (patch_realign.py) when exactly one place in the
file fits it, which the observation says. Changed Python files must still parse, or
the whole patch is rolled back.
"""

from __future__ import annotations

import os
import re
import stat
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from policies.paths import Decision, PathRefused
from sandbox.ecosystems import ecosystem_of_source
from sandbox.ecosystems.base import weakened_tests
from sandbox.worktree.diff import GitApply, file_paths
from tools.base import Observation, Tool, ToolContext, failed
from tools.patch_diagnose import ambiguous, explain, failing_hunk
from tools.patch_parse import FilePatch, PatchError, parse_patch, render_patch
from tools.patch_realign import realign
from tools.patch_reindent import reindent

MAX_PATCH_BYTES = 512 * 1024
NO_CODE_CHANGE = (
    "patch rolled back, nothing was changed: the code compiles exactly as before (only "
    "parentheses, spacing, comments or an equivalent spelling differ), so the failing tests "
    "would fail the same way. Change what the code does."
)
_MODE_MARK = "@worker-apply-mode "
# --unidiff-zero: without it git pins a hunk with context on one side only to the start or end
# of the file, and models rarely balance their context. Context-free hunks are refused earlier.
# No repository: the copy in the sandbox is one, and what its config says is not for our patch.
_GIT = GitApply(options=("--recount", "--unidiff-zero", "-p1"), no_repository=True).shell()

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "patch": {
            "type": "string",
            "minLength": 1,
            "description": "A unified diff: '--- a/PATH', '+++ b/PATH', then '@@' hunks.",
        },
    },
    "required": ["patch"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Edit files with a unified diff, one or more files, all or nothing. Copy context and '-' "
    "lines exactly from the file. Use '--- /dev/null' to create a file and '+++ /dev/null' to "
    "delete one. The form (PATH and the lines are the file's own):\n"
    "--- a/PATH\n+++ b/PATH\n@@ -N,2 +N,2 @@\n an unchanged line\n-a line as it is\n"
    "+the line as it becomes"
)


@dataclass(frozen=True)
class _Original:
    """A touched file as it was before the patch, to check and repair a rollback."""

    real: Path
    data: bytes | None  # None: the file did not exist
    mode: int = 0o644
    uid: int = -1
    gid: int = -1


def execute(args: dict[str, Any], ctx: ToolContext) -> Observation:
    """Check, apply, syntax-check and (if needed) roll back one patch."""
    text: str = args["patch"]
    if len(text.encode()) > MAX_PATCH_BYTES:
        return failed(f"the patch is larger than {MAX_PATCH_BYTES // 1024} KiB; split it up")
    try:
        files = parse_patch(text, workspace=ctx.workspace)
    except PatchError as exc:
        return failed(f"cannot read the patch: {exc}")
    refusals: list[tuple[str, Decision]] = []
    reals: dict[str, Path] = {}
    for fp in files:
        try:
            reals[fp.path] = ctx.paths.resolve(ctx.workspace, fp.path, write=True)
        except PathRefused as exc:
            refusals.append((fp.path, exc.decision))
    if refusals:
        listed = "\n".join(f"  {p}: {d.reason} [{d.rule}]" for p, d in refusals)
        return Observation(
            ok=False,
            text=f"patch refused, nothing was changed. These paths may not be written:\n{listed}",
            refusals=tuple(d for _, d in refusals),
            data={"refused": [p for p, _ in refusals]},
        )
    originals = {fp.path: _remember(reals[fp.path]) for fp in files}
    notes: list[str] = []
    for fp in files:
        data = originals[fp.path].data
        if fp.status == "M" and data is not None:
            current = data.decode("utf-8", "replace").splitlines()
            notes += reindent(fp, current)
            notes += realign(fp, current)
    problem = _precheck(files, originals)
    if problem:
        return failed(f"patch not applied, nothing was changed: {problem}")
    modes = {p: ("100755" if o.mode & 0o111 else "100644") for p, o in originals.items()}
    staged = ctx.box.stage(
        f"patch-{uuid.uuid4().hex[:12]}.diff", render_patch(files, modes=modes).encode()
    )
    result = ctx.box.run(_apply_script(staged), timeout_s=60)
    ctx.box.pull(fp.path for fp in files)  # where the copy lives in the container
    mode = _mode(result.output)
    if mode is None:
        refused = _not_applied(files, originals, result.output)
        return replace(refused, text="\n".join([refused.text, *notes])) if notes else refused
    broken = _syntax_errors(files, originals, ctx)
    weakened = "" if broken or ctx.paths.allow_edit_tests else _weakened(files, originals, ctx)
    if broken or weakened or _changes_no_code(files, originals, ctx):
        # Undone in the sandbox, then put back byte for byte by the host where it differs.
        ctx.box.run(f"{_GIT} -R {mode} {staged}", timeout_s=60)
        ctx.box.pull(fp.path for fp in files)
        undone: dict[str, Any] = {"rolled_back": True, "restored_by_host": _restore(originals)}
        if broken:
            text = f"patch rolled back, nothing was changed: it breaks the file's syntax.\n{broken}"
            return Observation(ok=False, text=text, data={**undone, "syntax_error": broken})
        if weakened:
            text = f"patch rolled back, nothing was changed: {weakened} (tests are not yours)"
            return Observation(ok=False, text=text, data={**undone, "weakens_tests": weakened})
        return Observation(ok=False, text=NO_CODE_CHANGE, data={**undone, "no_code_change": True})
    applied = _applied(files, mode, result.output)
    if notes:
        applied = replace(applied, text=applied.text + "\n" + "\n".join(notes))
    return applied


def remember(paths: list[str], ctx: ToolContext) -> dict[str, _Original]:
    """The files at `paths` (those the policy lets the model write) as they are now, to put
    back with `restore`."""
    kept = {}
    for rel in paths:
        try:
            kept[rel] = _remember(ctx.paths.resolve(ctx.workspace, rel, write=True))
        except PathRefused:
            continue
    return kept


def restore(originals: dict[str, _Original]) -> list[str]:
    """Put files back as `remember` found them; returns the paths that had changed."""
    return _restore(originals)


def _remember(real: Path) -> _Original:
    try:
        info = real.lstat()
    except FileNotFoundError:
        return _Original(real=real, data=None)
    data = real.read_bytes() if stat.S_ISREG(info.st_mode) else None
    return _Original(
        real=real, data=data, mode=stat.S_IMODE(info.st_mode), uid=info.st_uid, gid=info.st_gid
    )


def _precheck(files: list[FilePatch], originals: dict[str, _Original]) -> str | None:
    """Problems git would report less clearly: missing or existing files, ambiguous hunks."""
    for fp in files:
        orig = originals[fp.path]
        exists = orig.real.exists()
        if fp.status == "A" and exists:
            return (
                f"{fp.path} already exists; to change it, patch it with '--- a/{fp.path}' "
                "and hunks against its current lines (read it first)"
            )
        if fp.status != "A" and not exists:
            return (
                f"{fp.path} does not exist; to create it use '--- /dev/null' and '+++ b/{fp.path}'"
            )
        if fp.status != "A" and orig.data is None:
            return f"{fp.path} is not a regular file"
        if fp.status == "M" and orig.data is not None:
            message = ambiguous(fp, orig.data.decode("utf-8", "replace").splitlines())
            if message:
                return message
    return None


def _apply_script(staged: str) -> str:
    # Exact first; then let git match and strip trailing whitespace. No temp files: /tmp is
    # shared with whatever the tests left there.
    return (
        f"if ERR=$({_GIT} --check --whitespace=nowarn {staged} 2>&1); then M=--whitespace=nowarn; "
        f"elif {_GIT} --check --whitespace=fix {staged} >/dev/null 2>&1; then M=--whitespace=fix; "
        f'else printf "%s\\n" "$ERR"; exit 1; fi; '
        f'{_GIT} --verbose $M {staged} 2>&1 && echo "{_MODE_MARK}$M"'
    )


def _mode(output: str) -> str | None:
    for line in output.splitlines():
        if line.startswith(_MODE_MARK):
            return line[len(_MODE_MARK) :].strip()
    return None


def _not_applied(
    files: list[FilePatch], originals: dict[str, _Original], output: str
) -> Observation:
    failed_at = re.search(r"error: patch failed: (.+):(\d+)", output)
    if failed_at:
        path, line = failed_at[1], int(failed_at[2])
        fp = next((f for f in files if f.path == path), None)
        if fp is not None and originals[path].data is not None:
            lines = (originals[path].data or b"").decode("utf-8", "replace").splitlines()
            index = failing_hunk(fp, lines, line)
            return failed(
                "patch not applied, nothing was changed.\n" + explain(fp, index, lines),
                file=path,
                hunk=index + 1,
            )
    errors = [x[len("error: ") :] for x in output.splitlines() if x.startswith("error: ")]
    detail = "\n".join(errors[:10]) or output.strip()[-2000:]
    return failed(f"patch not applied, nothing was changed:\n{detail}")


def _syntax_errors(
    files: list[FilePatch], originals: dict[str, _Original], ctx: ToolContext
) -> str:
    """The first syntax error in a changed source file that parsed before the patch, as its
    language's parser says (sandbox/ecosystems/: `syntax_error`), or ''."""
    for fp in files:
        ecosystem = ecosystem_of_source(fp.path) if fp.status != "D" else None
        if ecosystem is None:
            continue
        before = originals[fp.path].data
        if before is not None and ecosystem.syntax_error(before, fp.path) is not None:
            continue  # already broken: the patch may be a step towards fixing it
        real = ctx.paths.resolve(ctx.workspace, fp.path)
        if (error := ecosystem.syntax_error(real.read_bytes(), fp.path)) is not None:
            return error
    return ""


def _weakened(files: list[FilePatch], originals: dict[str, _Original], ctx: ToolContext) -> str:
    """Why the patch weakens the tests inside a source file (a language whose unit tests live
    there: sandbox/ecosystems/base.py, `weakened_tests`), or ''."""
    for fp in files:
        before = originals[fp.path].data
        ecosystem = ecosystem_of_source(fp.path)
        if ecosystem is None or before is None:
            continue
        real = ctx.paths.resolve(ctx.workspace, fp.path)
        after = real.read_bytes() if fp.status != "D" and real.is_file() else b""
        if (why := weakened_tests(ecosystem, before, after, fp.path)) is not None:
            return why
    return ""


def _changes_no_code(
    files: list[FilePatch], originals: dict[str, _Original], ctx: ToolContext
) -> bool:
    """Whether the patch only changed source files, each to code that parses to the same code
    as before (only layout and comments differ: `same_code`)."""
    for fp in files:
        before = originals[fp.path].data
        ecosystem = ecosystem_of_source(fp.path)
        if fp.status != "M" or ecosystem is None or before is None:
            return False
        real = ctx.paths.resolve(ctx.workspace, fp.path)
        if not ecosystem.same_code(before, real.read_bytes(), fp.path):
            return False
    return True


def _restore(originals: dict[str, _Original]) -> list[str]:
    """Make every touched file byte-for-byte what it was; returns the paths the host repaired."""
    repaired = []
    for rel, orig in originals.items():
        current = orig.real.read_bytes() if orig.real.is_file() else None
        if current == orig.data:
            continue
        repaired.append(rel)
        if orig.data is None:
            orig.real.unlink(missing_ok=True)
            continue
        orig.real.parent.mkdir(parents=True, exist_ok=True)
        orig.real.write_bytes(orig.data)
        os.chmod(orig.real, orig.mode)
        if os.geteuid() == 0 and orig.uid >= 0:
            os.chown(orig.real, orig.uid, orig.gid)
    return repaired


def _applied(files: list[FilePatch], mode: str, output: str) -> Observation:
    moved = re.findall(r"Hunk #(\d+) succeeded at (\d+)", output)
    lines = [f"patch applied: {len(files)} file{'s' if len(files) != 1 else ''} changed"]
    for fp in files:
        counts = " ".join(
            c
            for c in (f"+{fp.added}" if fp.added else "", f"-{fp.removed}" if fp.removed else "")
            if c
        )
        lines.append(f"  {fp.status} {fp.path} ({counts or 'no line changes'})")
    if moved:
        lines.append(
            "(some hunks matched at other line numbers than their @@ lines said; "
            "read the file again before the next patch)"
        )
    if mode == "--whitespace=fix":
        lines.append(
            "(trailing whitespace differences were ignored and trailing whitespace "
            "was removed from the patched lines)"
        )
    return Observation(
        ok=True,
        text="\n".join(lines),
        data={
            "files": [
                {"path": f.path, "status": f.status, "added": f.added, "removed": f.removed}
                for f in files
            ],
            "whitespace_fixed": mode == "--whitespace=fix",
            "hunks_moved": len(moved),
        },
        changed_files=tuple(fp.path for fp in files),
    )


def _patched_files(args: dict[str, Any]) -> str:
    patch = args.get("patch")
    if not isinstance(patch, str):
        return ""
    return ", ".join(file_paths(patch, kinds=("new",)))[:60]


TOOL = Tool(
    name="apply_patch",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    execute=execute,
    target=_patched_files,
)
