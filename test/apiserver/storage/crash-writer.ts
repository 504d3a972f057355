// A writer process for the durability test: creates keys one at a time and prints each key once its write resolved.
import { openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";

const [path, countText, run = "run"] = process.argv.slice(2);
const storage = await openSqliteStorage({ path: path!, retention: { revisions: Infinity } });
const pad = "x".repeat(1000);
for (let i = 0; i < Number(countText); i++) {
  const key = `/crash/${run}/${String(i).padStart(6, "0")}`;
  const kv = await storage.create(key, JSON.stringify({ i, pad }));
  process.stdout.write(`${key} ${kv.modRevision}\n`);
}
await storage.close();
