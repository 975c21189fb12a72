import assert from 'node:assert';
import { Queue } from '../src/queue.mjs';

describe('Queue', () => {
  it('pops first in first out', () => {
    const q = new Queue();
    q.push(1); q.push(2);
    assert.strictEqual(q.pop(), 1);
  });
});

describe('Queue empty', () => {
  it('pop of empty gives undefined', () => {
    assert.strictEqual(new Queue().pop(), undefined);
  });
});
