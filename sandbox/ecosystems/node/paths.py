"""Node's protected files and test spellings, which the registry adds to the path policy
(sandbox/ecosystems/__init__.py: language_paths). Constants only: every run loads them,
whatever its language."""

from __future__ import annotations

#: The test script and runner sections of package.json (the whole file), the runners'
#: configuration, the TypeScript and Babel set-up the tests compile with, the lockfiles and what
#: picks the registry and the Node version (a fix that changes how the tests run is not a fix).
WRITE_DENY: tuple[str, ...] = (
    "**/package.json",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/vite.config.*",
    "**/.mocharc*",
    "**/ava.config.*",
    "**/.taprc",
    "**/tsconfig*.json",
    "**/babel.config.*",
    "**/.babelrc*",
    "**/package-lock.json",
    "**/npm-shrinkwrap.json",
    "**/yarn.lock",
    "**/pnpm-lock.yaml",
    "**/pnpm-workspace.yaml",
    "**/bun.lock",
    "**/bun.lockb",
    "**/.npmrc",
    "**/.yarnrc*",
    "**/.nvmrc",
    "**/.node-version",
)
#: The runners' test file names (`test/` and `spec/` are the policy's own).
TEST_GLOBS: tuple[str, ...] = (
    "**/test.[jt]s",  # a small library's one test file (`node --test test.js`)
    "**/test.[mc][jt]s",
    "**/tests.[jt]s",
    "**/*.test.[jt]s",
    "**/*.test.[jt]sx",
    "**/*.test.[mc][jt]s",
    "**/*.spec.[jt]s",
    "**/*.spec.[jt]sx",
    "**/*.spec.[mc][jt]s",
    "**/__tests__/**",
)
