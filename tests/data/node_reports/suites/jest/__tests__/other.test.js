test('throws', () => {
  throw new TypeError('boom')
})
