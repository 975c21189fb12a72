const test = require('tape')
test('throws', (t) => { throw new TypeError('boom') })
