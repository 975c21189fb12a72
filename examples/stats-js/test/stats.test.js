'use strict';

const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { add, mean } = require('../stats');

describe('add', () => {
  it('adds two numbers', () => {
    assert.equal(add(2, 3), 5);
  });
});

describe('mean', () => {
  it('averages three numbers', () => {
    assert.equal(mean([1, 2, 3]), 2);
  });

  it('averages one number', () => {
    assert.equal(mean([4]), 4);
  });
});
