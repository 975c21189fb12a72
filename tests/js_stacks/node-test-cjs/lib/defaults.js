'use strict';
const levels = ['debug', 'info'];

// The default level: the second one.
const level = levels.find((l) => l.startsWith('warn')).toUpperCase();

module.exports = { level, levels };
