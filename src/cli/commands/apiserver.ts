// `platform-ca apiserver`: the embedded API server on durable SQLite storage in a data directory.
import { join } from "node:path";
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX } from "../../api/group.js";
import { createLogger } from "../../logger.js";
import { UsageError } from "../program.js";

export const TLS_PENDING_MESSAGE =
  "TLS serving arrives with authentication; pass --insecure-local for a loopback-only development server";

interface ApiserverFlags {
  dataDir: string;
  listen: string;
  groupSuffix: string;
  insecureLocal?: boolean;
}

/** `HOST:PORT` or `[IPv6]:PORT`. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError(`expected \`--listen\` to be HOST:PORT (e.g. 127.0.0.1:6443), got ${JSON.stringify(text)}`);
  return { host: (m[1] ?? m[2])!, port };
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

export const apiserverCommand = (program: Command): void => {
  program
    .command("apiserver")
    .description("run the embedded API server on durable storage in a data directory")
    .requiredOption("--data-dir <dir>", "directory of the durable store (store.db)")
    .option("--listen <host:port>", "address to listen on; port 0 picks a free port", "127.0.0.1:6443")
    .option("--group-suffix <suffix>", "API group suffix", DEFAULT_GROUP_SUFFIX)
    .option("--insecure-local", "plain HTTP on loopback, every request treated as a local administrator")
    .action(async (flags: ApiserverFlags) => {
      const listen = parseListen(flags.listen);
      if (!flags.insecureLocal) throw new UsageError(TLS_PENDING_MESSAGE);
      if (!LOOPBACK.test(listen.host)) throw new UsageError(`--insecure-local serves only on loopback; got --listen ${flags.listen}`);
      // Loaded here, not at the top: fastify and SQLite would add ~0.25 s to every offline command's start.
      const [{ insecureLocalPipeline }, { createApiServer }, { openSqliteStorage }] = await Promise.all([
        import("../../apiserver/pipeline.js"),
        import("../../apiserver/server.js"),
        import("../../apiserver/storage/sqlite.js"),
      ]);
      const logger = createLogger({ name: "apiserver" });
      const storage = await openSqliteStorage({ path: join(flags.dataDir, "store.db"), logger });
      const server = createApiServer({
        storage,
        pipeline: insecureLocalPipeline(logger),
        groupSuffix: flags.groupSuffix,
        logger,
        listen,
        insecure: true,
      });
      try {
        await server.start();
      } catch (err) {
        await storage.close();
        throw err;
      }
      process.stdout.write(`API server listening on ${server.address}\n`);
      await new Promise<void>((resolve) => {
        const stop = (signal: NodeJS.Signals) => {
          logger.info({ signal }, "stopping");
          process.off("SIGTERM", stop);
          process.off("SIGINT", stop);
          resolve();
        };
        process.on("SIGTERM", stop);
        process.on("SIGINT", stop);
      });
      await server.stop();
      await storage.close();
    });
};
