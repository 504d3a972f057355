// Compiles a TypeScript entry (and what it imports) to a throw-away directory so a real `node` process can run it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(fileURLToPath(new URL("../../..", import.meta.url)));

/** Returns the path of the compiled entry; its directory is `dir` (remove it when done). */
export function compileForNode(entry: string): { readonly dir: string; readonly script: string } {
  const dir = mkdtempSync(join(tmpdir(), "pca-build-"));
  symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"), "dir");
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  const source = resolve(repo, entry);
  const out = spawnSync(process.execPath, [
    join(repo, "node_modules/typescript/bin/tsc"),
    "--outDir", dir, "--rootDir", repo, "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
    "--skipLibCheck", "--types", "node", "--strict", "--ignoreConfig", source,
  ], { cwd: repo, encoding: "utf8" });
  if (out.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`tsc failed for ${entry}:\n${out.stdout}${out.stderr}`);
  }
  return { dir, script: join(dir, relative(repo, source)).replace(/\.ts$/, ".js") };
}
