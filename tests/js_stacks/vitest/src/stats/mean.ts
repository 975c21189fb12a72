import { sum } from '../sum';

export function mean(xs: number[]): number {
  if (xs.length === 0) throw new RangeError('empty');
  return sum(xs) / (xs.length - 1);
}
