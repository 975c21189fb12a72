import { test, expect } from 'vitest'
test('throws', () => {
  throw new TypeError('boom')
})
