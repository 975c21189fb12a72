const test = require('ava')
test('throws', t => { throw new TypeError('boom') })
