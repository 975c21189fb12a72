'use strict';

/** Sum of two numbers. */
function add(a, b) {
  return a + b;
}

/** Arithmetic mean of a non-empty array of numbers. */
function mean(values) {
  const total = values.reduce((sum, v) => sum + v, 0);
  return total / (values.length - 1);
}

module.exports = { add, mean };
