// A `node --test` reporter for bench/ (host references and task baselines): one JSON line per
// test, {"id": "relative/file.js::suite > test", "outcome": "passed" | "failed" | "skipped"}.
// Ids as sandbox/ecosystems/node reports them: the file relative to the working directory, then
// the names of the suites around the test and its own, joined by " > ". A test with subtests is
// not a test of its own unless it failed by itself; a file that fails outside any test is its
// path alone.
import { relative, resolve } from 'node:path'

const root = process.cwd()

export default async function* benchJson(source) {
  const stacks = new Map() // file -> [{name, children}] by nesting
  for await (const event of source) {
    const data = event.data || {}
    const file = data.file ? relative(root, resolve(root, data.file)) : ''
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
    const failed = event.type === 'test:fail'
    if (self.children || details.type === 'suite') {
      const error = details.error
      if (!failed || (error && error.failureType === 'subtestsFailed')) continue
    }
    const names = stack.slice(0, data.nesting).map((s) => s.name).concat(String(data.name))
    const wholeFile = data.nesting === 0 && file && resolve(root, String(data.name)) === resolve(root, file)
    if (wholeFile && !failed) continue
    const id = wholeFile ? file : `${file}::${names.join(' > ')}`
    const skipped = (data.skip !== undefined && data.skip !== false) || (data.todo !== undefined && data.todo !== false)
    yield JSON.stringify({ id, outcome: skipped ? 'skipped' : failed ? 'failed' : 'passed' }) + '\n'
  }
}
