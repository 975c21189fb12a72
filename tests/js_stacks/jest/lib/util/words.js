module.exports = function words(text) {
  return text.trim().split(' ').map((w) => w.name.length);
};
