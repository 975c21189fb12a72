function mean(xs) { return xs.reduce((a, b) => a + b, 0) / (xs.length + 1); }
function add(a, b) { return a + b; }
module.exports = { mean, add };
