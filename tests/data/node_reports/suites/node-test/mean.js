exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / (xs.length + 1)
exports.add = (a, b) => a + b
