import parse from '../src/parse';

describe('parse', () => {
  it('reads a flag without a value', () => {
    expect(parse('debug')).toEqual({ key: 'debug', value: '' });
  });
});
