// A writer process for the durability tests: creates keys with `concurrency` writes in flight (default one at a
// time) and prints each key once its write resolved.
import { openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";

const [path, countText, run = "run", concurrencyText = "1"] = process.argv.slice(2);
const count = Number(countText);
const storage = await openSqliteStorage({ path: path!, retention: { revisions: Infinity } });
const pad = "x".repeat(1000);
let next = 0;
const writer = async (): Promise<void> => {
  for (let i = next++; i < count; i = next++) {
    const key = `/crash/${run}/${String(i).padStart(6, "0")}`;
    const kv = await storage.create(key, JSON.stringify({ i, pad }));
    process.stdout.write(`${key} ${kv.modRevision}\n`);
  }
};
await Promise.all(Array.from({ length: Number(concurrencyText) }, writer));
await storage.close();
