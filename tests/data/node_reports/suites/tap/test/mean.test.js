const t = require('tap')
const { mean, add } = require('../src/mean')
t.test('stats', async t => {
  t.test('mean', async t => {
    t.test('of one number', async t => {
      console.log('computing the mean of [4]')
      t.equal(mean([4]), 4)
    })
    t.test('of nothing', { skip: true }, async t => {})
  })
  t.test('adds', async t => { t.equal(add(1, 2), 3) })
})
t.test('top level <&> "quoted"', async t => { t.equal(add(2, 2), 4) })
