"""The sandbox image holds the programs test suites commonly call, as a CI runner's image does: each
one does its job inside a real sandbox (a test that needs one the image lacks ends in exit 6,
sandbox/testrun/missing_programs.py, so a user would notice its absence)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.docker

# Each program doing what a suite asks of it, in the sandbox's writable /tmp, and what it says.
USES = {
    "less": ("printf 'paged\\n' | less", "paged"),
    "diff": (
        "printf 'a\\n' > /tmp/x; printf 'b\\n' > /tmp/y; diff -u /tmp/x /tmp/y > /tmp/d; "
        "test $? -eq 1 && grep -q '^+b' /tmp/d && echo differs",
        "differs",
    ),
    "patch": (
        "printf 'a\\n' > /tmp/p; printf 'patched\\n' > /tmp/q; diff -u /tmp/p /tmp/q > /tmp/e; "
        "patch -s /tmp/p /tmp/e && cat /tmp/p",
        "patched",
    ),
    "git": ("git init -q /tmp/g && git -C /tmp/g rev-parse --is-inside-work-tree", "true"),
    "make": ("printf 'all:\\n\\t@echo made\\n' > /tmp/Makefile && make -s -C /tmp", "made"),
    "gcc": (  # a C extension's build: the compiler and Python's headers
        "printf '#include <Python.h>\\nint main(void){puts(\"compiled\");return 0;}\\n' "
        "> /tmp/c.c && gcc $(python3-config --includes) /tmp/c.c -o /tmp/c && /tmp/c",
        "compiled",
    ),
    "msgfmt": (
        'printf \'msgid "a"\\nmsgstr "b"\\n\' > /tmp/m.po && msgfmt -o /tmp/m.mo /tmp/m.po '
        "&& test -s /tmp/m.mo && echo catalog",
        "catalog",
    ),
    "file": ("file -b -L /bin/sh", "ELF"),
    "ps": ("ps -o comm= -p $$", "sh"),
}


def test_the_programs_suites_commonly_call_are_there_and_work(make_repo, open_sandbox):
    box = open_sandbox(make_repo({"test_ok.py": "def test_ok():\n    pass\n"})).box
    failed = {}
    for program, (use, said) in USES.items():
        r = box.run(use)
        if r.exit_code != 0 or said not in r.output:
            failed[program] = f"exit {r.exit_code}: {r.output.strip()[-300:]}"
    assert failed == {}


def test_an_image_is_current_only_when_built_here_from_this_recipe_on_this_base(docker_client):
    # The check before every run's first container (sandbox/container/image.py): the image is
    # there, a base is, and the image's recipe label names that base and this Dockerfile.
    from sandbox.container.image import DEFAULT_IMAGE, _current
    from sandbox.container.suites import DEFAULT_SUITE

    ready = _current(docker_client, name=DEFAULT_IMAGE, base=None, suite=DEFAULT_SUITE)
    assert ready is not None and ready.id == docker_client.images.get(DEFAULT_IMAGE).id
    # A name nothing answers to; a base that is not there; a base it was not built on.
    missing = "worker-overhead-test-absent:none"
    assert _current(docker_client, name=missing, base=None, suite=DEFAULT_SUITE) is None
    assert _current(docker_client, name=DEFAULT_IMAGE, base=missing, suite=DEFAULT_SUITE) is None
    other = _current(docker_client, name=DEFAULT_IMAGE, base=DEFAULT_IMAGE, suite=DEFAULT_SUITE)
    assert other is None
