const missing = require('left-pad-not-installed')
test('never runs', () => {})
