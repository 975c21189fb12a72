// A per-test report for tape, whose TAP names no test file: preloaded by the worker
// (NODE_OPTIONS --require, staged outside the repository) into the tape CLI's process before any
// project code runs there. It watches every test tape queues (each harness's `Results#push`, in
// tape 4 and 5 alike, so `test`, `test.only`, `test.skip`, ES test files and harnesses of the
// project's own all pass through it, and each subtest through its parent's 'test' event), and
// at exit writes JUnit in the shape of worker_node_test_reporter.mjs: one <testcase> per test
// with its id (`relative/file.js::test name`, a subtest's `file::parent > subtest`) in
// `nodeid`, and the run's token as a property.
//
// A test's file is the test file the tape CLI loaded that registered it: the outermost frame of
// the registering call that is the project's own (not node_modules, not Node's), so a helper
// that calls `test()` for its test file gives that test file, the one to run the test by.
//
// The token and the report's path come in WORKER_RUN_TOKEN and WORKER_TAPE_REPORT and are
// taken out of the environment here, before a test file loads: kept in this closure only.
// In any other process (`nyc`, a test's child `node`) this file does nothing. A process whose
// main is not yet known when this file loads (nyc 10-14's spawn-wrap shim: its argv names the
// shim, and it runs nyc's wrap.js, then tape's bin, each by `Module.runMain` with the argv
// rewritten) decides when tape's bin is the main run, still before tape or a test file loads.
//
// How an outcome is known: tape's own events on each test ('prerun', 'result' for each
// assertion, 'end'), and an uncaught exception (which ends tape) given to the test that ran.
// What tape prints is never read: a test that was queued and never ran (the process exited
// first) is an error, not a pass, whatever the output says.
'use strict'

const fs = require('fs')
const path = require('path')
const url = require('url')

const CLI = /(?:\.bin[\\/]tape|[\\/]tape[\\/]bin[\\/]tape)$/
let token = ''
let reportPath = ''
const root = process.env.WORKER_TEST_ROOT || process.cwd()
const records = [] // every test we were told of, in the order tape queued them
const running = [] // the tests started and not ended, innermost last
const OUTPUT_CHARS = 4000
const SEPARATOR = ' > '

// -- where a test was registered -----------------------------------------------------------

function callerFile() {
  const limit = Error.stackTraceLimit
  const prepare = Error.prepareStackTrace
  let sites = []
  try {
    Error.stackTraceLimit = 200
    Error.prepareStackTrace = (_, callSites) => callSites
    const holder = {}
    Error.captureStackTrace(holder, callerFile)
    sites = holder.stack || []
  } finally {
    Error.stackTraceLimit = limit
    Error.prepareStackTrace = prepare
  }
  let found = ''
  for (const site of sites) {
    let file = (site && site.getFileName && site.getFileName()) || ''
    if (!file || file === __filename || /^(data|node):/.test(file)) continue
    if (file.startsWith('file:')) file = url.fileURLToPath(file)
    if (/[\\/]node_modules[\\/]/.test(file) || !path.isAbsolute(file)) continue
    const rel = path.relative(root, file).split(path.sep).join('/')
    if (!rel.startsWith('../')) found = rel // outermost wins
  }
  return found
}

// -- the tests -----------------------------------------------------------------------------

function problem(message) {
  return { message, stack: message }
}

function watch(t, file, parent, results) {
  const name = String(t.name || '(anonymous)')
  const rec = {
    id: parent ? `${parent.id}${SEPARATOR}${name}` : `${file}::${name}`,
    file,
    test: t,
    results,
    outcome: 'queued',
    skip: !!t._skip,
    todo: !!t._todo,
    error: null,
  }
  records.push(rec)
  t.once('prerun', () => {
    rec.outcome = 'running'
    running.push(rec)
  })
  t.on('result', (res) => {
    if (!res || typeof res !== 'object' || res.ok || res.todo || res.skip) return
    rec.failed = true
    if (!rec.error) rec.error = assertion(res)
  })
  t.on('test', (st) => watch(st, file, rec, results))
  t.once('end', () => {
    if (rec.outcome === 'running') rec.outcome = 'ended'
    const at = running.lastIndexOf(rec)
    if (at >= 0) running.splice(at, 1)
  })
}

function assertion(res) {
  const lines = [String(res.name || res.operator || 'failed')]
  if (res.operator) lines.push(`operator: ${res.operator}`)
  if ('expected' in res) lines.push(`expected: ${show(res.expected)}`)
  if ('actual' in res) lines.push(`actual:   ${show(res.actual)}`)
  if (res.at) lines.push(`at: ${res.at}`)
  const error = res.error || (res.actual instanceof Error ? res.actual : null)
  if (error && error.stack) lines.push(String(error.stack))
  return { message: lines[0], stack: lines.join('\n') }
}

function show(value) {
  try {
    return require('util').inspect(value, { depth: 4, breakLength: Infinity })
  } catch {
    return '(not printable)'
  }
}

function hook(Results) {
  if (!Results || !Results.prototype || typeof Results.prototype.push !== 'function') return
  if (Results.prototype.push.workerTape) return
  const push = Results.prototype.push
  const ours = function (t) {
    if (t && typeof t.on === 'function') watch(t, callerFile(), null, this)
    return push.apply(this, arguments)
  }
  ours.workerTape = true
  Results.prototype.push = ours
}

// tape's results module, by path: the CLI's own tape (its bin's package) and the one the
// project's files resolve from the test root, where that is another copy.
function hookTape() {
  const places = []
  try {
    places.push(path.join(path.dirname(fs.realpathSync(process.argv[1])), '..'))
  } catch {}
  try {
    places.push(path.dirname(require.resolve('tape/package.json', { paths: [root] })))
  } catch {}
  for (const dir of new Set(places)) {
    try {
      hook(require(path.join(dir, 'lib', 'results.js')))
    } catch {}
  }
}

// -- the report ------------------------------------------------------------------------------

function xml(text) {
  return String(text)
    .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
}

function attribute(text) {
  return xml(text).replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;')
}

function outcomeOf(rec, code) {
  if (rec.skip || rec.todo) return 'skipped'
  if (rec.outcome === 'queued') {
    const only = rec.results && rec.results._only
    if (only && only !== rec.test && !rec.id.includes(SEPARATOR)) return 'skipped'
    rec.error = rec.error || problem(`did not run: the process exited (code ${code}) before tape ran it`)
    return 'error'
  }
  if (rec.outcome === 'running') {
    rec.error = rec.error || problem(`the process exited (code ${code}) while this test ran`)
    return 'error'
  }
  return rec.failed ? 'failed' : 'passed'
}

function report(code) {
  const RANK = { passed: 0, skipped: 1, failed: 2, error: 3 }
  const byId = new Map()
  for (const rec of records) {
    const outcome = outcomeOf(rec, code)
    const seen = byId.get(rec.id)
    if (!seen || RANK[outcome] > RANK[seen.outcome]) byId.set(rec.id, { ...rec, outcome })
  }
  let body = ''
  for (const rec of byId.values()) {
    let inner = ''
    if (rec.outcome === 'skipped') inner = '<skipped/>'
    else if (rec.outcome !== 'passed') {
      const kind = rec.outcome === 'error' ? 'error' : 'failure'
      const error = rec.error || problem('failed')
      const message = String(error.message || error).slice(0, 2000)
      const stack = String(error.stack || message).slice(0, OUTPUT_CHARS)
      inner = `<${kind} message="${attribute(message)}">${xml(stack)}</${kind}>`
    }
    const cut = rec.id.indexOf('::')
    const name = rec.id.slice(cut + 2)
    body += `<testcase nodeid="${attribute(rec.id)}" classname="${attribute(rec.file)}" name="${attribute(name)}">${inner}</testcase>\n`
  }
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n<testsuite name="tape">\n' +
    `<properties><property name="worker_run_token" value="${attribute(token)}"/></properties>\n` +
    body +
    `</testsuite>\n</testsuites>\n<!-- tape exit code ${code} -->\n`
  )
}

function start() {
  token = process.env.WORKER_RUN_TOKEN
  reportPath = process.env.WORKER_TAPE_REPORT || ''
  // Test files, and every process they start, run without them.
  delete process.env.WORKER_RUN_TOKEN
  delete process.env.WORKER_TAPE_REPORT
  hookTape()
  // An uncaught throw ends tape (it has no handler): the test that ran is its error.
  process.on('uncaughtExceptionMonitor', (error) => {
    const rec = running[running.length - 1]
    if (!rec || rec.error) return
    const message = error && typeof error.message === 'string' ? error.message : String(error)
    rec.error = { message, stack: (error && error.stack) || message }
    rec.failed = true
  })
  // Before tape's own exit listener, which ends the process from inside it.
  process.on('exit', (code) => {
    try {
      fs.writeFileSync(reportPath, report(code))
    } catch (error) {
      process.stderr.write(`worker: the tape report was not written: ${error}\n`)
    }
  })
}

const isTape = () => CLI.test(process.argv[1] || '') && !!process.env.WORKER_RUN_TOKEN
if (isTape()) {
  start()
} else if (process.env.WORKER_RUN_TOKEN) {
  const Module = require('module')
  const runMain = Module.runMain
  if (typeof runMain === 'function') {
    // Each main the shim's chain starts (the shim, nyc's wrap.js, then tape's bin) comes here.
    Module.runMain = function () {
      if (isTape()) {
        Module.runMain = runMain
        start()
      }
      return runMain.apply(this, arguments)
    }
  }
}
