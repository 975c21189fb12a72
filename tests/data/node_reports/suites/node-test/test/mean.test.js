const { describe, it, test } = require('node:test')
const assert = require('node:assert')
const { mean, add } = require('../mean.js')

describe('stats', () => {
  describe('mean', () => {
    it('of one number', () => {
      console.log('computing the mean of [4]')
      assert.strictEqual(mean([4]), 4)
    })
    it('of nothing', { skip: true }, () => {})
    it('of strings', { todo: true }, () => { throw new Error('later') })
  })
  it('adds', () => {
    assert.strictEqual(add(1, 2), 3)
  })
})

test('top level <&> "quoted"', () => {
  assert.strictEqual(add(2, 2), 4)
})

test('with subtests', async (t) => {
  await t.test('inner passes', () => {})
  await t.test('inner fails', () => { throw new TypeError('boom') })
})
