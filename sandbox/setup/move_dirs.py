"""Moves folders set-up wrote inside the tree into the image, and leaves a link in their place.

Executed by the set-up container's python3 (stdlib only; no imports from the worker), as the
sandbox user, once the set-up command succeeded. Usage:
    move_dirs.py WORKSPACE DEST SCRATCH REL...
Each folder WORKSPACE/REL (not a link) is moved to DEST/REL, on the container's own disk, which
`docker commit` keeps (the tree is a bind mount it does not). A relative link inside it that
pointed outside it (npm's link to a workspace package, `node_modules/a -> ../packages/a`) is
made absolute, so it still names the same place in the tree; links within it (pnpm's
`.pnpm` store, `.bin`) stay as they are. SCRATCH is a JSON list of `FOLDER/NAME`: a moved
folder called FOLDER gets a link NAME -> /tmp, where absent, because the tests' sandbox has a
read-only root and test tools write there (the installer says which: Node's `.cache`, `.vite`,
`.vite-temp`, `.vitest-cache` in node_modules). A NAME with a `/` in it is a file a tool writes
deeper inside (vitest's type check: `vitest/dist/tsconfig.tmp.tsbuildinfo`; its folders may be
glob patterns, for pnpm's `.pnpm/*/node_modules/vitest`): in each folder that matches, a link
to a file of its own in /tmp, where absent. One JSON line on stdout lists the folders moved.
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys


def relink(moved, old):
    """Make absolute every relative link under `moved` that leaves it (as seen from `old`)."""
    for top, dirs, files in os.walk(moved):
        for name in dirs + files:
            path = os.path.join(top, name)
            if not os.path.islink(path):
                continue
            target = os.readlink(path)
            if os.path.isabs(target):
                continue
            was = os.path.normpath(os.path.join(old, os.path.relpath(top, moved), target))
            if was == old or was.startswith(old + os.sep):
                continue
            os.remove(path)
            os.symlink(was, path)


def link_scratch(moved, name):
    """`name` inside `moved` a link into /tmp, where absent: a folder name to /tmp itself, a
    deeper file (its folders a glob) to a file of its own there, named after its place."""
    if "/" not in name:
        if not os.path.lexists(os.path.join(moved, name)):
            os.symlink("/tmp", os.path.join(moved, name))
        return
    parent, file = name.rsplit("/", 1)
    for folder in sorted(glob.glob(os.path.join(glob.escape(moved), parent))):
        path = os.path.join(folder, file)
        if os.path.islink(folder) or not os.path.isdir(folder) or os.path.lexists(path):
            continue
        digest = hashlib.sha256(os.path.relpath(path, moved).encode()).hexdigest()[:16]
        os.symlink(f"/tmp/worker-scratch-{digest}-{file}", path)


def main():
    workspace, dest, rels = sys.argv[1], sys.argv[2], sys.argv[4:]
    scratch = [str(s).split("/", 1) for s in json.loads(sys.argv[3]) if "/" in str(s)]
    moved = []
    for rel in rels:
        src = os.path.join(workspace, rel)
        dst = os.path.join(dest, rel)
        if os.path.islink(src) or not os.path.isdir(src):
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            shutil.rmtree(dst)
        # mv copies across filesystems (links as links, modes kept) as fast as it can.
        done = subprocess.run(["mv", "-T", src, dst], stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.stderr.write(f"cannot move {rel}: {done.stderr.strip()}\n")
            return 1
        relink(dst, src)
        for folder, name in scratch:
            if os.path.basename(rel) == folder:
                link_scratch(dst, name)
        os.symlink(dst, src)
        moved.append(rel)
    print(json.dumps(moved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
