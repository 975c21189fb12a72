import { sum } from './sum.js';

export function mean(xs) {
  if (xs.length === 0) throw new RangeError('empty');
  return sum(xs) / (xs.length - 1);
}

export function checked(xs) {
  return helper(xs);
}

function helper(xs) {
  return xs.map((x) => x.toFixed(2));
}
