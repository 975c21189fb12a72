const t = require('tap')
t.test('throws', async t => { throw new TypeError('boom') })
