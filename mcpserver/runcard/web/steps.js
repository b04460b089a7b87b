// The steps of a run as a tree: a step whose path has '/' (quotes/fedex/ask) is shown under
// its parent (quotes/fedex), created when the run has no record of the parent itself.

// stepTree turns the run's step records, in run order, into nodes {path, name, status,
// startedAt, finishedAt, children}.
export function stepTree(records) {
  const roots = [];
  const byPath = new Map();
  const nodeAt = (path) => {
    let node = byPath.get(path);
    if (node) return node;
    const cut = path.lastIndexOf("/");
    node = { path, name: cut < 0 ? path : path.slice(cut + 1), children: [] };
    byPath.set(path, node);
    (cut < 0 ? roots : nodeAt(path.slice(0, cut)).children).push(node);
    return node;
  };
  for (const r of records) {
    const path = String(r.path ?? r.id ?? "");
    if (!path) continue;
    Object.assign(nodeAt(path), { status: r.status, startedAt: r.startedAt, finishedAt: r.finishedAt });
  }
  return roots;
}

// duration says how long from start to end (now, when it has not ended): "850 ms", "3.2 s",
// "2 min 5 s", "1 h 4 min".
export function duration(start, end) {
  const ms = Math.max(0, (end ? Date.parse(end) : Date.now()) - Date.parse(start));
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60_000) return (ms / 1000).toFixed(1) + " s";
  const s = Math.round(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}
