const assert = require('assert')
const { mean, add } = require('../src/mean')

describe('stats', function () {
  describe('mean', function () {
    it('of one number', function () {
      console.log('computing the mean of [4]')
      assert.strictEqual(mean([4]), 4)
    })
    it.skip('of nothing', function () {
      assert.ok(Number.isNaN(mean([])))
    })
    it('of strings')
  })
  it('adds', function () {
    assert.strictEqual(add(1, 2), 3)
  })
})

it('top level <&> "quoted"', function () {
  assert.strictEqual(add(2, 2), 4)
})
