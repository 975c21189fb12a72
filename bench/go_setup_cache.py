"""A Go module's set-up with dependencies, cold and warm, and what its build cache saves the
agent's first `go test` (docs/go-tests.md, docs/performance.md).

    python3 bench/go_setup_cache.py [--runs 2] [--mirror /work/.mirror]

The module requires two real modules, github.com/google/go-cmp v0.7.0 and
github.com/BurntSushi/toml v1.6.0 (from the fetch tool's mirrors, as their module zips hold
them: bench/corpus_go.py), served as a module proxy (tests/go_proxy.py's tree) by a server on
the Docker bridge's gateway address, the one host address the set-up fence's proxy reaches
(GOPROXY=http://GATEWAY:PORT, GONOSUMDB for them: go.sum holds the tree's own hashes). Then
`worker sandbox run-tests --json`:

- cold: the set-up image built (`go mod download`, then the tests' packages compiled into the
  build cache that each test run copies into its GOCACHE: sandbox/ecosystems/go/image.py);
- warm: the set-up image cached, each run on a fresh container (so each a first `go test`);
- warm, the image's seed only (worker before the set-up kept its build cache): the same run with
  `--test-cmd` that fills GOCACHE from the image's seed alone;
- warm, empty cache: `--test-cmd "GOCACHE=/tmp/no-seed go test ./..."`.

Each row: the whole command's seconds and its test command's own (`duration_s`), medians of
--runs; the set-up images made are removed at the end. A markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The repository first: bench/sandbox.py would shadow the sandbox package.
sys.path[:] = [str(ROOT), str(HERE), str(HERE / "tasks")] + [
    p for p in sys.path if Path(p or ".").resolve() != HERE
]

from corpus_go import bridge_gateway, module_files, serve_folder  # noqa: E402
from generate import commit_tree  # type: ignore[import-not-found]  # noqa: E402

from sandbox.ecosystems.go.image import CACHE_SEED  # noqa: E402
from tests.go_proxy import build_proxy, go_sum  # noqa: E402

DEPS = ("google/go-cmp@v0.7.0", "BurntSushi/toml@v1.6.0")  # from the fetch mirrors
APP = """package app

import "github.com/BurntSushi/toml"

type Config struct {
	Name  string
	Ports []int
	Tags  map[string]string
}

func Parse(text string) (Config, error) {
	var c Config
	_, err := toml.Decode(text, &c)
	return c, err
}
"""
APP_TEST = """package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	got, err := Parse("Name = 'x'\\nPorts = [1, 2]\\n[Tags]\\na = 'b'\\n")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Name: "x", Ports: []int{1, 2}, Tags: map[string]string{"a": "b"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}
"""
SEED_ONLY = f"cp -R {CACHE_SEED} /tmp/seed-only && GOCACHE=/tmp/seed-only go test ./..."
EMPTY = "GOCACHE=/tmp/no-seed go test ./..."


def run_tests(repo: Path, env: dict[str, str], test_cmd: str | None) -> dict[str, object]:
    command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
               "--repo", str(repo)]  # fmt: skip
    command += ["--test-cmd", test_cmd] if test_cmd else []
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if "{" not in done.stdout:
        raise SystemExit(f"run-tests printed no summary: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    if not summary.get("passed"):
        raise SystemExit(f"run-tests did not pass: {summary.get('headline')}\n{done.stderr}")
    setup = re.search(r"set-up done in ([\d.]+)s, cached as (\S+)", done.stderr)
    return {
        "s": seconds,
        "test_s": float(summary["duration_s"]),
        "setup_s": float(setup.group(1)) if setup else None,
        "image": setup.group(2) if setup else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="go-setup-cache-"))
    made: list[str] = []
    try:
        modules: dict[str, dict[str, dict[str, str | bytes]]] = {}
        for spec in DEPS:
            module, version, files = module_files(spec, args.mirror)
            modules[module] = {version: dict(files)}
        build_proxy(work / "proxy", modules)
        repo = work / "app"
        repo.mkdir()
        requires = "".join(f"\t{m} {next(iter(v))}\n" for m, v in modules.items())
        name = f"example.com/app // {os.urandom(6).hex()}"  # a set-up no earlier run cached
        (repo / "go.mod").write_text(f"module {name}\n\ngo 1.24\n\nrequire (\n{requires})\n")
        (repo / "go.sum").write_text(go_sum(modules))
        (repo / "app.go").write_text(APP)
        (repo / "app_test.go").write_text(APP_TEST)
        commit_tree(repo, "m")
        os.chmod(repo, 0o755)
        with serve_folder(work / "proxy", bridge_gateway()) as url:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "GOPROXY": url,
                   "GONOSUMDB": "github.com"}  # fmt: skip
            cold = run_tests(repo, env, None)
            made += [str(cold["image"])] if cold["image"] else []
            rows = [("cold: set-up built", [cold])]
            for name, cmd in (("warm", None), ("warm, the image's seed only", SEED_ONLY),
                              ("warm, empty cache", EMPTY)):  # fmt: skip
                rows.append((name, [run_tests(repo, env, cmd) for _ in range(args.runs)]))
    finally:
        for image in made:
            subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print("| run | `worker sandbox run-tests` s | set-up s | its test command s |")
    print("|---|---|---|---|")
    for name, runs in rows:
        whole = statistics.median(float(r["s"]) for r in runs)  # type: ignore[arg-type]
        own = statistics.median(float(r["test_s"]) for r in runs)  # type: ignore[arg-type]
        setup = runs[0]["setup_s"]
        print(f"| {name} | {whole:.1f} | {'' if setup is None else setup} | {own:.1f} |")
    deps = ", ".join(f"{m} {next(iter(v))}" for m, v in modules.items())
    print(f"\nexample.com/app requiring {deps}; warm rows: median of {args.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
