// Every security requirement names a scheme of components.securitySchemes,
// and every scope it lists is among that scheme's declared scopes: the
// OAuth 2 flows' scopes, or x-scopes for another type (OpenAPI 3.1 lets a
// requirement of any scheme type list roles).
module.exports = (requirements, _opts, { document, path }) => {
  const schemes = (document.data.components || {}).securitySchemes || {};
  const results = [];
  (requirements || []).forEach((req, i) => {
    for (const [name, scopes] of Object.entries(req || {})) {
      const scheme = schemes[name];
      if (!scheme) {
        results.push({ message: `"${name}" is not a security scheme of components.securitySchemes.`, path: [...path, i, name] });
        continue;
      }
      const declared = new Set(Object.keys(scheme["x-scopes"] || {}));
      for (const flow of Object.values(scheme.flows || {})) {
        Object.keys(flow.scopes || {}).forEach((s) => declared.add(s));
      }
      (scopes || []).forEach((s, j) => {
        if (!declared.has(s)) {
          results.push({ message: `scope "${s}" is not declared by scheme "${name}".`, path: [...path, i, name, j] });
        }
      });
    }
  });
  return results;
};
