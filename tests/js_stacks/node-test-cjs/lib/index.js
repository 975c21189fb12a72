'use strict';
const defaults = require('./defaults');

function load(overrides) {
  return Object.assign({}, defaults, overrides);
}

module.exports = { load };
