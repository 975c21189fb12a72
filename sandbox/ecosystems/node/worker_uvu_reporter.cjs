// A per-test report for uvu, which has no reporter of its own: preloaded by the worker
// (NODE_OPTIONS --require, staged outside the repository) into the uvu CLI's process before any
// project code runs there. It hands test files a wrapped `suite` and `test` (CommonJS through
// Module._load and in place, ES modules through a module resolve hook), records each test's
// outcome as uvu runs it, and at exit writes JUnit in the shape of worker_node_test_reporter.mjs:
// one <testcase> per test with its id (`relative/file.js::Suite > test`, `relative/file.js::test`
// for uvu's unnamed suite) in `nodeid`, and the run's token as a property.
//
// The token and the report's path come in WORKER_RUN_TOKEN and WORKER_UVU_REPORT and are
// taken out of the environment here, before a test file loads: kept in this closure only.
// In any other process (`c8`, a test's child `node`) this file does nothing.
//
// How an outcome is known: uvu sets `state.__test__` to each test's name before its
// before.each hooks and to '' when the suite's run ends; the state object is ours to watch
// (an accessor), and the handler and each hook are wrapped, so a throw from any of them fails
// the test that was running. A test that was queued and never ran (a before hook threw, an
// after.each threw, --bail, the process exited) is an error, not a pass.
'use strict'

const fs = require('fs')
const path = require('path')
const Module = require('module')
const url = require('url')

const CLI = /(?:\.bin[\\/]uvu|uvu[\\/]bin\.js)$/
const active = CLI.test(process.argv[1] || '') && !!process.env.WORKER_RUN_TOKEN
const token = active ? process.env.WORKER_RUN_TOKEN : ''
const reportPath = active ? process.env.WORKER_UVU_REPORT || '' : ''
if (active) {
  // Test files, and every process they start, run without them.
  delete process.env.WORKER_RUN_TOKEN
  delete process.env.WORKER_UVU_REPORT
}
const root = process.env.WORKER_TEST_ROOT || process.cwd()
const wrappedOf = new WeakMap() // uvu's exports -> ours
const runners = new WeakSet() // uvu's queued suite runs that went through our wrappers
const records = [] // every test we were told of, in the order uvu queued them
const OUTPUT_CHARS = 4000

// -- where a test was registered -----------------------------------------------------------

function callerFile() {
  const limit = Error.stackTraceLimit
  const prepare = Error.prepareStackTrace
  let sites = []
  try {
    Error.stackTraceLimit = 50
    Error.prepareStackTrace = (_, callSites) => callSites
    const holder = {}
    Error.captureStackTrace(holder, callerFile)
    sites = holder.stack || []
  } finally {
    Error.stackTraceLimit = limit
    Error.prepareStackTrace = prepare
  }
  for (const site of sites) {
    let file = (site && site.getFileName && site.getFileName()) || ''
    if (!file || file === __filename || /^(data|node):/.test(file)) continue
    if (file.startsWith('file:')) file = url.fileURLToPath(file)
    if (/[\\/]node_modules[\\/]uvu[\\/]/.test(file) || !path.isAbsolute(file)) continue
    return path.relative(root, file).split(path.sep).join('/')
  }
  return ''
}

// -- the wrapped suite -----------------------------------------------------------------------

function newRun(suite) {
  return { suite, tests: [], only: [], skips: [], arr: [], pos: -1, open: null, stopped: '' }
}

function newRecord(suite, name) {
  const file = callerFile() || suite.file
  const id = suite.name ? `${file}::${suite.name} > ${name}` : `${file}::${name}`
  return { id, name: String(name), file, outcome: 'queued', error: null }
}

function close(run) {
  const rec = run.open
  if (rec && rec.outcome === 'running') rec.outcome = rec.error ? 'failed' : 'passed'
  run.open = null
}

function end(run, why) {
  close(run)
  for (const rec of run.arr) {
    if (rec.outcome !== 'queued') continue
    rec.outcome = 'error'
    rec.error = rec.error || problem(`did not run: ${why}`)
  }
}

function watch(suite, value) {
  if (value === '') {
    // The end of a run (uvu's `finally`), or the suite being made (no run queued yet).
    const run = suite.active || suite.runs.shift()
    suite.active = null
    if (run) end(run, run.stopped || 'uvu stopped the suite before it')
    return
  }
  if (!suite.active) suite.active = suite.runs.shift() || null
  const run = suite.active
  if (!run) return
  close(run)
  let next = run.pos + 1
  while (next < run.arr.length && run.arr[next].name !== String(value)) next += 1
  if (next >= run.arr.length) return // not a test of ours: leave the run as it stands
  run.pos = next
  run.open = run.arr[next]
  run.open.outcome = 'running'
}

// What went wrong with a test that uvu did not run: a message, no stack of ours.
function problem(message) {
  return { message, stack: message }
}

function failed(rec, error) {
  if (!rec || rec.error) return
  const message = error && typeof error.message === 'string' ? error.message : String(error)
  const stack = error && typeof error.stack === 'string' ? error.stack : message
  // Our wrapper's frame is not the test's.
  rec.error = { message, stack: stack.split('\n').filter((l) => !l.includes(__filename)).join('\n') }
}

function wrapHandler(handler, rec) {
  if (typeof handler !== 'function') return handler
  return async function (...args) {
    try {
      return await handler.apply(this, args)
    } catch (error) {
      failed(rec, error)
      throw error
    }
  }
}

function wrapHook(fn, suite, run, kind, file) {
  if (typeof fn !== 'function') return fn
  return async function (...args) {
    try {
      return await fn.apply(this, args)
    } catch (error) {
      const message = error && error.message ? error.message : String(error)
      if (kind === 'each') {
        failed(run.open, error) // the test it ran for; uvu stops the suite if it throws again
        run.stopped = `a before.each or after.each hook threw: ${message}`
      } else if (kind === 'before') {
        run.stopped = `a before hook threw: ${message}` // uvu runs none of the suite's tests
      } else {
        const id = suite.name ? `${file}::${suite.name}` : file
        records.push({ id, outcome: 'error', error: problem(`an after hook threw: ${message}`) })
      }
      throw error
    }
  }
}

function wrapSuite(realSuite, name, state) {
  const suite = { name: String(name || ''), file: callerFile(), runs: [], active: null, pending: null }
  suite.pending = newRun(suite)
  let current = state.__test__
  try {
    Object.defineProperty(state, '__test__', {
      configurable: true,
      enumerable: true,
      get: () => current,
      set: (value) => {
        current = value
        watch(suite, value)
      },
    })
  } catch {
    return realSuite(name, state) // a frozen state: this suite's tests go unseen, said at exit
  }
  const inner = realSuite(name, state)
  const add = (key, testName, handler) => {
    const rec = newRecord(suite, testName)
    suite.pending[key].push(rec)
    return wrapHandler(handler, rec)
  }
  const test = (testName, handler) => inner(testName, add('tests', testName, handler))
  test.only = (testName, handler) => inner.only(testName, add('only', testName, handler))
  test.skip = (testName, handler) => {
    suite.pending.skips.push(newRecord(suite, testName))
    return inner.skip(testName, handler)
  }
  const hook = (register, kind) => (fn) =>
    register(wrapHook(fn, suite, suite.pending, kind, callerFile() || suite.file))
  test.before = hook(inner.before, 'before')
  test.before.each = hook(inner.before.each, 'each')
  test.after = hook(inner.after, 'after')
  test.after.each = hook(inner.after.each, 'each')
  test.run = () => {
    const run = suite.pending
    suite.pending = newRun(suite)
    run.arr = run.only.length ? run.only : run.tests
    const skipped = (run.only.length ? run.tests : []).concat(run.skips)
    for (const rec of skipped) rec.outcome = 'skipped'
    records.push(...run.arr, ...skipped)
    suite.runs.push(run)
    const queue = globalThis.UVU_QUEUE
    const group = queue && queue[globalThis.UVU_INDEX || 0]
    const before = group ? group.length : 0
    const out = inner.run()
    if (group && group.length > before) runners.add(group[group.length - 1])
    return out
  }
  return test
}

/** uvu's exports (the CommonJS object or the ES module's namespace) with our suite and test. */
function wrapExports(real) {
  if (!active || !real || typeof real.suite !== 'function') return real
  if (wrappedOf.has(real)) return wrappedOf.get(real)
  const ours = Object.assign({}, real)
  ours.suite = (name = '', state = {}) => wrapSuite(real.suite, name, state)
  ours.test = wrapSuite(real.suite, '', {}) // uvu's own `test` is `suite()`: one of ours instead
  wrappedOf.set(real, ours)
  return ours
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

function unseen() {
  let count = 0
  for (const group of globalThis.UVU_QUEUE || []) {
    for (const item of group || []) if (typeof item === 'function' && !runners.has(item)) count += 1
  }
  return count
}

function report(code) {
  const RANK = { passed: 0, skipped: 1, failed: 2, error: 3 }
  const byId = new Map()
  for (const rec of records) {
    if (rec.outcome === 'running') {
      rec.outcome = 'error'
      rec.error = rec.error || problem(`the process exited (code ${code}) while this test ran`)
    } else if (rec.outcome === 'queued') {
      rec.outcome = 'error'
      rec.error = problem(`did not run: the process exited (code ${code}) before uvu ran it`)
    }
    const seen = byId.get(rec.id)
    if (!seen || RANK[rec.outcome] > RANK[seen.outcome]) byId.set(rec.id, rec)
  }
  const missed = unseen()
  if (missed) {
    const error = problem(
      `${missed} uvu suite(s) ran without this report's wrapper (an ES module on a Node ` +
        'with no module hooks): their tests are not in this report'
    )
    byId.set('uvu', { id: 'uvu', outcome: 'error', error })
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
    const file = cut < 0 ? rec.id : rec.id.slice(0, cut)
    const name = cut < 0 ? rec.id : rec.id.slice(cut + 2)
    inner = `<testcase nodeid="${attribute(rec.id)}" classname="${attribute(file)}" name="${attribute(name)}">${inner}</testcase>\n`
    body += inner
  }
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n<testsuite name="uvu">\n' +
    `<properties><property name="worker_run_token" value="${attribute(token)}"/></properties>\n` +
    body +
    `</testsuite>\n</testsuites>\n<!-- uvu exit code ${code} -->\n`
  )
}

// -- the hooks -------------------------------------------------------------------------------

// An ES module in place of uvu's own: its exports through wrapExports (this file, by path).
function wrapperUrl(realUrl, preload) {
  const source =
    `import * as real from ${JSON.stringify(realUrl)};\n` +
    "import { createRequire } from 'node:module';\n" +
    `const ours = createRequire(${JSON.stringify(preload)})(${JSON.stringify(preload)}).wrapExports(real);\n` +
    'export const suite = ours.suite, test = ours.test, exec = ours.exec;\n'
  return 'data:text/javascript,' + encodeURIComponent(source)
}

const ESM_ENTRY = /[\\/]uvu[\\/]dist[\\/]index\.mjs$/

function hookModules() {
  const load = Module._load
  Module._load = function (request, parent, isMain) {
    const loaded = load.apply(this, arguments)
    return request === 'uvu' ? wrapExports(loaded) : loaded
  }
  // ES modules' `import 'uvu'`: a resolve hook, on module.register's thread (Node 18.19,
  // 20.6 and later), else in this one (registerHooks, where register is gone).
  if (typeof Module.register === 'function') {
    const hooks =
      `const ESM_ENTRY = ${ESM_ENTRY};\nconst PRELOAD = ${JSON.stringify(__filename)};\n` +
      `${wrapperUrl.toString()}\n` +
      'export async function resolve(specifier, context, next) {\n' +
      '  const found = await next(specifier, context)\n' +
      "  if (specifier !== 'uvu' || !ESM_ENTRY.test(found.url || '')) return found\n" +
      "  return { url: wrapperUrl(found.url, PRELOAD), format: 'module', shortCircuit: true }\n" +
      '}\n'
    Module.register('data:text/javascript,' + encodeURIComponent(hooks))
  } else if (typeof Module.registerHooks === 'function') {
    Module.registerHooks({
      resolve(specifier, context, next) {
        const found = next(specifier, context)
        if (specifier !== 'uvu' || !ESM_ENTRY.test(found.url || '')) return found
        return { url: wrapperUrl(found.url, __filename), format: 'module', shortCircuit: true }
      },
    })
  }
}

// uvu's CommonJS exports, changed in place: a loader of its own that resolves `uvu` itself and
// loads it by path (the `esm` package of `uvu -r esm`) passes Module._load's 'uvu' and the
// resolve hook, but shares require's cache, so its test files get our suite and test too.
function wrapInPlace() {
  let real
  try {
    real = require(require.resolve('uvu', { paths: [root] }))
  } catch {
    return // not installed where the tests run from: the hooks alone
  }
  if (!real || typeof real.suite !== 'function' || wrappedOf.has(real)) return
  const ours = wrapExports(Object.assign({}, real))
  try {
    real.suite = ours.suite
    real.test = ours.test
  } catch {
    return // read-only exports: the hooks alone
  }
  wrappedOf.set(real, real) // Module._load's 'uvu' gets this object as it is
}

if (active) {
  hookModules()
  wrapInPlace()
  process.on('exit', (code) => {
    try {
      fs.writeFileSync(reportPath, report(code))
    } catch (error) {
      process.stderr.write(`worker: the uvu report was not written: ${error}\n`)
    }
  })
}

module.exports = { wrapExports }
