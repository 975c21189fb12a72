const { mean, add } = require('../src/mean')

describe('stats', () => {
  describe('mean', () => {
    it('of one number', () => {
      console.log('computing the mean of [4]')
      expect(mean([4])).toBe(4)
    })
    it.skip('of nothing', () => {
      expect(mean([])).toBeNaN()
    })
    it.todo('of strings')
  })
  it('adds', () => {
    expect(add(1, 2)).toBe(3)
  })
})

test('top level <&> "quoted"', () => {
  expect(add(2, 2)).toBe(4)
})
