#!/usr/bin/env bash
# The npm registry the tests serve (tests/npm_registry.py): verdaccio, installed into
# tests/.verdaccio, and its storage, tests/.npm-storage, filled here once with the packages of
# tests/npm-packages.txt and their dependencies, fetched from the registry npm is configured
# with. In the tests verdaccio runs with no uplink, from that storage alone: no test reaches
# beyond its own network. Needs node and npm on the host; skipped when they are missing or
# the storage already holds this list.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[npm-storage] %s\n' "$*" >&2; }
VERDACCIO_VERSION=6.8.0  # the last 6.x that runs on Node 20 (6.9 asks for 22)
list=tests/npm-packages.txt
stamp=tests/.npm-storage/.fetched

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "node and npm are not installed: the Node tests will say so"; exit 0
fi
want="verdaccio@$VERDACCIO_VERSION glibc+musl fetched-only $(tr '\n' ' ' < "$list")"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
        && [ -x tests/.verdaccio/node_modules/.bin/verdaccio ]; then
    exit 0
fi

started=$(date +%s)
say "installing verdaccio $VERDACCIO_VERSION into tests/.verdaccio"
mkdir -p tests/.verdaccio
echo '{"name": "worker-test-verdaccio", "private": true}' > tests/.verdaccio/package.json
npm install --prefix tests/.verdaccio --no-audit --no-fund --loglevel=error \
    "verdaccio@$VERDACCIO_VERSION" >&2

scratch=$(mktemp -d /tmp/worker-npm-storage.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$scratch"; }
trap cleanup EXIT
uplink=$(npm config get registry)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -rf tests/.npm-storage
mkdir -p tests/.npm-storage
cat > "$scratch/config.yaml" <<YAML
storage: $PWD/tests/.npm-storage
auth:
  htpasswd:
    file: $scratch/htpasswd
    max_users: -1
uplinks:
  upstream:
    url: $uplink
    timeout: 60s
packages:
  '**':
    access: \$all
    proxy: upstream
log: { type: stdout, format: pretty, level: warn }
YAML
say "fetching tests/npm-packages.txt through verdaccio on 127.0.0.1:$port (uplink $uplink)"
tests/.verdaccio/node_modules/.bin/verdaccio --config "$scratch/config.yaml" \
    --listen "127.0.0.1:$port" > "$scratch/verdaccio.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/-/ping" >/dev/null 2>&1 && break
    sleep 0.2
done
mkdir -p "$scratch/project"
echo '{"name": "worker-npm-storage", "private": true}' > "$scratch/project/package.json"
# A cache of its own: npm fetches every tarball through verdaccio, which keeps it.
# --ignore-scripts: nothing of these packages runs on this host.
# Twice: for glibc, then musl. An npm that cannot tell a container's libc fetches the optional
# binaries of both (esbuild's, rollup's, lightningcss's), and one the storage lacks is a 500
# from verdaccio that npm retries for a minute before it does without.
for libc in glibc musl; do
    rm -rf "$scratch/project/node_modules" "$scratch/project/package-lock.json"
    # shellcheck disable=SC2046
    npm install --prefix "$scratch/project" --registry "http://127.0.0.1:$port/" \
        --cache "$scratch/cache" --ignore-scripts --no-audit --no-fund --loglevel=error \
        --os=linux --cpu=x64 --libc="$libc" \
        $(cat "$list") >&2 || { tail -20 "$scratch/verdaccio.log" >&2; exit 1; }
done
# Only the releases whose tarball was fetched stay listed: with no uplink, verdaccio answers a
# listed release it lacks with a 500, and a test's lockfile, made by another Node than this
# host's, can pick one (npm prefers releases whose `engines` accept the Node it runs on).
python3 - <<'PY'
import json, pathlib, re
for meta in pathlib.Path("tests/.npm-storage").glob("**/package.json"):
    data = json.loads(meta.read_text())
    if not isinstance(data.get("versions"), dict):
        continue
    have = {p.name for p in meta.parent.glob("*.tgz")}
    kept = {v: m for v, m in data["versions"].items()
            if m.get("dist", {}).get("tarball", "").rsplit("/", 1)[-1] in have}
    if not kept or len(kept) == len(data["versions"]):
        continue
    data["versions"] = kept
    key = lambda v: [int(n) for n in re.findall(r"\d+", v)[:3]]
    tags = data.get("dist-tags", {})
    data["dist-tags"] = {t: v for t, v in tags.items() if v in kept}
    data["dist-tags"].setdefault("latest", max(kept, key=key))
    meta.write_text(json.dumps(data))
PY
echo "$want" > "$stamp"
say "done in $(( $(date +%s) - started ))s: $(du -sh tests/.npm-storage | cut -f1) in tests/.npm-storage"
