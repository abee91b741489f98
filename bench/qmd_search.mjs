// Many `qmd search --format json` queries answered in one Node process, by the code the qmd CLI
// runs for one (its store's searchFTS and extractSnippet, its collections synced from its YAML
// config the same way): a fresh CLI process per query takes a second or two on a loaded
// machine, and the quality run asks thousands.
//   node qmd_search.mjs QMD_PACKAGE_DIR QUERIES_JSON  ->  one JSON array of hits per query, per line
// QUERIES_JSON: [{"query": "...", "collection": "...", "limit": 20}, ...]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [qmdDir, queriesFile] = process.argv.slice(2);
const load = (name) => import(pathToFileURL(join(qmdDir, "dist", name)).href);
const { createStore, enableProductionMode, extractSnippet, searchFTS, syncConfigToDb } =
  await load("store.js");
const { loadConfig } = await load("collections.js");

enableProductionMode(); // as the CLI entry point does: the index under $XDG_CACHE_HOME/qmd
const store = createStore();
try {
  syncConfigToDb(store.db, loadConfig());
} catch {
  // as the CLI: no config yet, the database alone
}
for (const { query, collection, limit } of JSON.parse(readFileSync(queriesFile, "utf8"))) {
  const rows = searchFTS(store.db, query, Math.max(50, limit * 2), collection);
  const hits = rows.slice(0, limit).map((row) => {
    const { line, snippet } = extractSnippet(row.body, query, 300, row.chunkPos, row.chunkLen);
    return {
      docid: `#${row.docid}`,
      score: Math.round(row.score * 100) / 100,
      file: row.filepath,
      line,
      title: row.title,
      snippet,
    };
  });
  process.stdout.write(JSON.stringify(hits) + "\n");
}
