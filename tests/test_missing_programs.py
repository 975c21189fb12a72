"""Which failures to start a program are the environment's (stop before the model) and which the
code's: the parsing of real pytest output (captured in the sandbox image), in-process."""

from __future__ import annotations

from pathlib import Path

from sandbox.container.results import CommandResult
from sandbox.testrun.junit import TestFailure, TestSummary
from sandbox.testrun.missing_programs import missing_programs, programs_not_found
from sandbox.testrun.run import TestRun

# pytest's long traceback of `subprocess.run(["frobnicate-tool", "--version"])`, as the JUnit
# report keeps it (sandbox/testrun/junit.py trims the middle).
SUBPROCESS = """\
def test_direct():
>       subprocess.run(["frobnicate-tool", "--version"], check=True)

tests/test_a.py:4:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
[... 160 lines cut ...]
                else:
                    err_filename = orig_executable
                if errno_num != 0:
                    err_msg = os.strerror(errno_num)
>               raise child_exception_type(errno_num, err_msg, err_filename)
E               FileNotFoundError: [Errno 2] No such file or directory: 'frobnicate-tool'

/usr/lib/python3.11/subprocess.py:1901: FileNotFoundError"""

SUBPROCESS_SHORT = """\
tests/test_a.py:4: in test_direct
    subprocess.run(["frobnicate-tool", "--version"], check=True)
/usr/lib/python3.11/subprocess.py:548: in run
    with Popen(*popenargs, **kwargs) as process:
/usr/lib/python3.11/subprocess.py:1901: in _execute_child
    raise child_exception_type(errno_num, err_msg, err_filename)
E   FileNotFoundError: [Errno 2] No such file or directory: 'frobnicate-tool'"""

OPEN = """\
def test_open():
>       open("frobnicate-tool")
E       FileNotFoundError: [Errno 2] No such file or directory: 'frobnicate-tool'

tests/test_a.py:17: FileNotFoundError"""

WHICH = """\
def test_which():
>       assert shutil.which("frob3")
E       AssertionError: assert None
E        +  where None = <function which at 0x7f1206c196c0>('frob3')
E        +    where <function which at 0x7f1206c196c0> = shutil.which"""

EXPECTS_RAISE = """\
def test_missing_tool_is_reported():
    with pytest.raises(ToolMissing):
>       run_tool("frobnicate-tool")
""" + SUBPROCESS.split("[... 160 lines cut ...]\n")[1]


def run_of(*failures: tuple[str, str], output: str = "") -> TestRun:
    summary = TestSummary(
        passed=1,
        failed=len(failures),
        errors=0,
        skipped=0,
        failures=tuple(
            TestFailure(test_id=tid, kind="failure", message="", traceback=tb)
            for tid, tb in failures
        ),
    )
    result = CommandResult(
        command="pytest", exit_code=1, duration_s=0.1, timed_out=False, oom_killed=False,
        output=output, output_bytes=len(output), truncated=False,
    )  # fmt: skip
    return TestRun(command="pytest", result=result, summary=summary if failures else None,
                   expects_junit=True)  # fmt: skip


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


CALLS_IT = {"tests/test_a.py": 'import subprocess\nsubprocess.run(["frobnicate-tool", "-V"])\n'}


def test_a_program_the_tests_run_by_name_is_the_environments(tmp_path: Path) -> None:
    root = tree(tmp_path, CALLS_IT)
    for traceback in (SUBPROCESS, SUBPROCESS_SHORT):
        (found,) = missing_programs(run_of(("tests/test_a.py::test_direct", traceback)), root)
        assert (found.program, found.where) == ("frobnicate-tool", "tests/test_a.py::test_direct")
        line = found.describe()
        assert "'frobnicate-tool'" in line and "--image" in line
        assert "docs/configuration.md" in line and "\n" not in line


def test_a_missing_file_opened_by_the_code_is_no_program() -> None:
    assert programs_not_found(OPEN) == []


def test_what_shells_and_which_say_of_a_program_they_cannot_find() -> None:
    said = {
        "/bin/sh: 1: frob: not found": "frob",
        "sh: 1: exec: frob: not found": "frob",
        "bash: frob: command not found": "frob",
        "bash: line 1: frob: command not found": "frob",
        "/bin/sh: line 1: frob: command not found": "frob",
        "scripts/build.sh: 3: frob: not found": "frob",
        "zsh:1: command not found: frob": "frob",
        "E   AssertionError: 'sh: 1: frob: not found\\n'": "frob",
        WHICH: "frob3",
    }
    for text, name in said.items():
        assert programs_not_found(text) == [name], text
    for text in ("frob: not found", "KeyError: 'frob'", "ssh: connect to host x: refused"):
        assert programs_not_found(text) == [], text


def test_a_failure_that_expects_an_exception_is_the_codes() -> None:
    # A test that a missing tool is reported well fails on the raw error: the code's to mend.
    assert programs_not_found(EXPECTS_RAISE) == []


def test_a_path_or_a_file_of_the_repository_is_the_codes(tmp_path: Path) -> None:
    root = tree(tmp_path, {**CALLS_IT, "bin/frobnicate-tool": "#!/bin/sh\n"})
    assert missing_programs(run_of(("t", SUBPROCESS)), root) == []
    for path in ("./scripts/tool.sh", "/opt/tools/bin/frobnicate-tool"):
        traceback = SUBPROCESS.replace("'frobnicate-tool'", repr(path))
        assert missing_programs(run_of(("t", traceback)), tree(tmp_path, CALLS_IT)) == []


def test_a_name_the_code_computes_is_the_codes_and_one_written_out_is_not(tmp_path: Path) -> None:
    # A flipped test adds Windows' suffix on Linux: 'less.exe' is written nowhere, so the model
    # gets it; the same name written out is a program the repository asks for.
    computed = 'import os\nEXE = "less" + (".exe" if os.name != "nt" else "")\n'
    traceback = SUBPROCESS.replace("frobnicate-tool", "less.exe")
    assert missing_programs(run_of(("t", traceback)), tree(tmp_path, {"pager.py": computed})) == []
    written = tree(tmp_path, {"pager.py": 'EXE = "less.exe"\n'})
    assert [m.program for m in missing_programs(run_of(("t", traceback)), written)] == ["less.exe"]


def test_prose_and_a_working_folder_are_not_a_program_written_out(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "tool.py": (
                '"""Runs frobnicate-tool."""\nimport subprocess\n\n\ndef run(name):\n'
                '    """Like frobnicate-tool --x."""\n'
                '    # frobnicate-tool\n    subprocess.run([name], cwd="frobnicate-tool")\n'
            ),
            "README.md": "Install frobnicate-tool first.\n",
        },
    )
    assert missing_programs(run_of(("t", SUBPROCESS)), root) == []


def test_scripts_makefiles_and_configuration_count_as_written_out(tmp_path: Path) -> None:
    for rel, text in {
        "Makefile": "check:\n\tfrobnicate-tool --lint src\n",
        "tox.ini": "[testenv]\nallowlist_externals = frobnicate-tool\n",
        ".github/workflows/ci.yml": "steps:\n  - run: sudo apt-get install -y frobnicate-tool\n",
        "scripts/check.sh": '#!/bin/sh\nfrobnicate-tool "$@"\n',
        "broken.py": "print 'frobnicate-tool'\n",  # Python 2: read as text
        "shell.py": 'import os\nos.system(f"cat {PATH} | frobnicate-tool -q")\n',
    }.items():
        root = tree(tmp_path / rel.replace("/", "_"), {rel: text})
        assert [m.program for m in missing_programs(run_of(("t", SUBPROCESS)), root)] == [
            "frobnicate-tool"
        ], rel


def test_the_projects_own_script_not_installed_is_named_as_such(tmp_path: Path) -> None:
    # Its package folder has the same name; the declaration says it is a command to install.
    for rel, text in {
        "pyproject.toml": '[project]\nname = "frob"\n[project.scripts]\nfrob = "frob.cli:main"\n',
        "setup.cfg": "[options.entry_points]\nconsole_scripts =\n    frob = frob.cli:main\n",
        "setup.py": "setup(entry_points={'console_scripts': [\n    'frob=frob.cli:main']})\n",
    }.items():
        root = tree(tmp_path / rel, {rel: text, "frob/__init__.py": "", "frob/cli.py": ""})
        (found,) = missing_programs(run_of(output="/bin/sh: 1: frob: not found\n"), root)
        assert (found.program, found.where, found.declared_in) == ("frob", "the test command", rel)
        assert "not installed" in found.describe()


def test_one_entry_per_program_naming_the_first_test(tmp_path: Path) -> None:
    run = run_of(
        ("tests/test_a.py::test_one", SUBPROCESS),
        ("tests/test_a.py::test_two", SUBPROCESS_SHORT),
        ("tests/test_a.py::test_three", "captured err:\nbash: line 1: frob2: command not found"),
    )
    root = tree(tmp_path, {"tests/test_a.py": "X = ['frobnicate-tool', 'frob2']\n"})
    found = [(m.program, m.where) for m in missing_programs(run, root)]
    assert found == [
        ("frobnicate-tool", "tests/test_a.py::test_one"),
        ("frob2", "tests/test_a.py::test_three"),
    ]
