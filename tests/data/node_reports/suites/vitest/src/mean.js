export function mean(xs) { return xs.reduce((a, b) => a + b, 0) / (xs.length + 1); }
export function add(a, b) { return a + b; }
