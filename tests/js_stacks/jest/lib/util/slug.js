// Turn a title into a slug.
function slugify(title) {
  const parts = title.toLowerCase().split(/\s+/);
  return parts.join('_');
}
module.exports = { slugify };
