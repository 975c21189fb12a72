// A mocha reporter for bench/ (host references): one JSON line per test in the file named by
// BENCH_MOCHA_REPORT, {"id": "relative/file.js::suite > test", "outcome": ...}, beside mocha's
// own `spec` output. A hook that fails is reported under the hook's title path.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
// The project's own mocha, not one beside this file.
const Mocha = require(require.resolve('mocha', { paths: [process.cwd()] }))

const { EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING } = Mocha.Runner.constants

class BenchJson extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options)
    const out = process.env.BENCH_MOCHA_REPORT
    const root = process.cwd()
    const write = (test, outcome) => {
      const file = test.file ? path.relative(root, test.file) : ''
      const line = JSON.stringify({ id: `${file}::${test.titlePath().join(' > ')}`, outcome })
      if (out) fs.appendFileSync(out, line + '\n')
    }
    runner.on(EVENT_TEST_PASS, (test) => write(test, 'passed'))
    runner.on(EVENT_TEST_FAIL, (test) => write(test, 'failed'))
    runner.on(EVENT_TEST_PENDING, (test) => write(test, 'skipped'))
  }
}

module.exports = BenchJson
