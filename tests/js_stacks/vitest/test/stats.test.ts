import { describe, it, expect } from 'vitest';
import { mean, Range } from '../src/stats';

describe('stats', () => {
  it('mean of three', () => {
    expect(mean([1, 2, 3])).toBe(2);
  });
  it('clamps', () => {
    expect(new Range(0, 10).clamp(12)).toBe(10);
  });
  it('width', () => {
    expect(new Range(0, 10).width()).toBe(10);
  });
});
