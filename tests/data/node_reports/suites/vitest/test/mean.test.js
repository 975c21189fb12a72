import { describe, it, test, expect } from 'vitest'
import { mean, add } from '../src/mean.js'

describe('stats', () => {
  describe('mean', () => {
    it('of one number', () => {
      console.log('computing the mean of [4]')
      expect(mean([4])).toBe(4)
    })
    it.skip('of nothing', () => {
      expect(mean([])).toBeNaN()
    })
  })
  it('adds', () => {
    expect(add(1, 2)).toBe(3)
  })
})

test('top level <&> "quoted"', () => {
  expect(add(2, 2)).toBe(4)
})
