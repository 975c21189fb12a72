import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mean, checked } from '../src/mean.js';

test('mean of three', () => {
  assert.equal(mean([1, 2, 3]), 2);
});

test('checked throws inside', () => {
  assert.deepEqual(checked([1, null]), ['1.00', '0.00']);
});
