const { slugify } = require('./slug');
module.exports = { slugify, words: require('./words') };
