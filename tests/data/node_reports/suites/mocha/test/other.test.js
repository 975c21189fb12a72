describe('hooks', function () {
  before(function () { throw new Error('setup broke') })
  it('never runs', function () {})
})
it('throws', function () {
  throw new TypeError('boom')
})
