// A reporter for `node --test` (Node 18.17 and later), staged by the worker outside the
// repository and loaded by the test runner's own process: one JUnit <testcase> per test, with
// the test's id (`relative/file.test.js::suite > nested > test`) in a `nodeid` attribute, and
// the run's token (WORKER_RUN_TOKEN) as a property. Node's own junit reporter names no file
// before Node 24, so the same test name in two files would be one id there.
//
// Leaf tests are reported; a suite or a test with subtests only when it failed on its own (a
// hook, a throw after its subtests), not for its children's failures. A test file that fails
// outside any test is reported by its path alone, with what it printed.
import { relative, resolve } from 'node:path'
import { inspect } from 'node:util'

const root = process.env.WORKER_TEST_ROOT || process.cwd()
const token = process.env.WORKER_RUN_TOKEN || ''
// Test files are spawned after the reporters load: they do not inherit the token.
delete process.env.WORKER_RUN_TOKEN
const OUTPUT_CHARS = 64 * 1024 // of what one test file printed, kept for its own error

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

// What a test file that died printed first as an error (`Error: Cannot find module 'x'`).
function errorLine(output) {
  const match = /^(?:[\w$.]*Error|Error)(?: \[\w+\])?: .*$/m.exec(output || '')
  return match ? match[0] : ''
}

function fileOf(data) {
  return data.file ? relative(root, resolve(root, data.file)) : ''
}

// A test's error, as text: an error from a test file's process arrives deserialized, and may be
// an object of no prototype (a deepStrictEqual's), which String() throws on.
function text(value) {
  try {
    return String(value)
  } catch {
    return inspect(value)
  }
}

function why(error) {
  if (!error) return ['', '']
  const cause = error.cause !== undefined ? error.cause : error
  const message = cause && typeof cause.message === 'string' ? cause.message : ''
  const stack = cause && typeof cause.stack === 'string' ? cause.stack : ''
  return [message || text(cause), stack || message || text(cause)]
}

export default async function* workerJunit(source) {
  const stacks = new Map() // file -> [{name, children}] by nesting
  const printed = new Map() // file -> what it printed (capped)
  const counts = { tests: 0, failures: 0, skipped: 0 }
  yield '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n<testsuite name="node --test">\n'
  yield `<properties><property name="worker_run_token" value="${xml(token)}"/></properties>\n`
  for await (const event of source) {
    const data = event.data || {}
    const file = fileOf(data)
    if (event.type === 'test:stdout' || event.type === 'test:stderr') {
      const sofar = printed.get(file) || ''
      if (sofar.length < OUTPUT_CHARS) printed.set(file, sofar + String(data.message || ''))
      continue
    }
    if (event.type === 'test:start') {
      const stack = stacks.get(file) || []
      stack.length = data.nesting
      if (data.nesting > 0 && stack[data.nesting - 1]) stack[data.nesting - 1].children = true
      stack.push({ name: String(data.name), children: false })
      stacks.set(file, stack)
      continue
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue
    const stack = stacks.get(file) || []
    const self = stack[data.nesting] || { name: String(data.name), children: false }
    const details = data.details || {}
    const error = details.error
    const failed = event.type === 'test:fail'
    if (self.children || details.type === 'suite') {
      // A parent: its own failure only (a hook, a throw), not its children's.
      if (!failed || (error && error.failureType === 'subtestsFailed')) continue
    }
    const names = stack.slice(0, data.nesting).map((s) => s.name).concat(String(data.name))
    const wholeFile = data.nesting === 0 && file && resolve(root, String(data.name)) === resolve(root, file)
    if (wholeFile && !failed) continue // a file that ran without failing is not a test
    const id = wholeFile ? file : `${file}::${names.join(' > ')}`
    const duration = ((details.duration_ms || 0) / 1000).toFixed(6)
    let body = ''
    counts.tests += 1
    if (data.skip !== undefined && data.skip !== false || data.todo !== undefined && data.todo !== false) {
      counts.skipped += 1
      body = '<skipped/>'
    } else if (failed) {
      counts.failures += 1
      let [message, stack] = why(error)
      const kind = wholeFile || (error && error.failureType === 'hookFailed') ? 'error' : 'failure'
      const output = wholeFile ? printed.get(file) : ''
      if (wholeFile) message = errorLine(output) || message
      body = `<${kind} message="${attribute(message.slice(0, 2000))}">${xml(stack)}</${kind}>`
      // Which test printed what is not known: a file's output goes with the file's own error.
      if (output) body += `<system-out>${xml(output)}</system-out>`
    }
    const name = names.join(' > ')
    yield `<testcase nodeid="${attribute(id)}" classname="${attribute(file)}" name="${attribute(name)}" time="${duration}">${body}</testcase>\n`
  }
  yield `</testsuite>\n</testsuites>\n<!-- ${counts.tests} tests, ${counts.failures} failed, ${counts.skipped} skipped -->\n`
}
