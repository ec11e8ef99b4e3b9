// The page's address: `#/<page>/<id>?<query>`, so every view can be bookmarked and shared.

export function parseRoute(hash) {
  const [path, query = ""] = hash.replace(/^#\/?/, "").split("?");
  const [page = "", ...rest] = path.split("/");
  return { page, id: rest.length ? decodeURIComponent(rest.join("/")) : null, query: new URLSearchParams(query) };
}

export function href(page, id, query) {
  const qs = query && [...new URLSearchParams(query)].length ? `?${new URLSearchParams(query)}` : "";
  return `#/${page}${id ? `/${encodeURIComponent(id)}` : ""}${qs}`;
}

export function navigate(page, id, query) {
  location.hash = href(page, id, query);
}
