const { slugify, words } = require('../lib/util');

test('slugify joins with dashes', () => {
  expect(slugify('Hello big World')).toBe('hello-big-world');
});

test('words counts', () => {
  expect(words('a bb')).toEqual([1, 2]);
});

test('words of one', () => {
  expect(words('abc')).toEqual([3]);
});
