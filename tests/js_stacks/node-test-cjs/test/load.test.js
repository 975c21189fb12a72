const test = require('node:test');
const assert = require('node:assert');
const { load } = require('..');

test('load keeps overrides', () => {
  assert.strictEqual(load({ level: 'x' }).level, 'x');
});
