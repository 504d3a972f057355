// The controller manager of `platform-ca up` on its own thread: the API server keeps one core's event loop, the
// controllers (which hand it their requests over an in-thread channel and watch over the data directory's unix-domain
// socket, authenticated and authorized as any client, or use loopback HTTPS when there is no socket) get the other.
// Both threads share one memo of verified CSRs.
//
// The main side starts the worker, waits for "started" (or the reason it could not start), and at stop asks it to
// finish its syncs, release what it holds and exit. A worker that dies on its own is started again with backoff.
import { isMainThread, parentPort, Worker, workerData, type MessagePort } from "node:worker_threads";
import type { GroupNames } from "../../api/group.js";
import type { Component, ComponentContext } from "../../apiserver/bootstrap/run-server.js";
import { compiledScript } from "../../compiled-script.js";
import { asErrorCode, PlatformError, toPlatformError } from "../../errors.js";
import { logOutput, type Logger, type LogOutput } from "../../logger.js";
import { keyWrapper, useKeyWrapper } from "../../pki/wrapped-key.js";
import type { KmsSettings } from "../../apiserver/encryption/kms-provider.js";
import type { TracingConfig } from "../../config/tracing-config.js";
import type { LocalConnection } from "../../apiserver/bootstrap/local-socket.js";

const THREAD_KIND = "platform-ca-controller-thread";
const RESTART_DELAYS_MS = [1000, 2000, 5000, 10_000, 30_000];
/** "Started" is reported once the controllers' first work is done, or after this long. */
const SETTLE_MAX_MS = 5000;

interface ThreadData {
  readonly kind: typeof THREAD_KIND;
  readonly names: GroupNames;
  readonly adminConfigPath: string;
  /** The data directory: its ServiceAccount key signs token Secrets' tokens. */
  readonly dataDir: string;
  readonly caFiles: { readonly certFile: string; readonly keyFile: string };
  /** Replicas share the store: elect a leader (see ComponentContext.replicated). */
  readonly replicated: boolean;
  /** The main thread's log format and level (its flags), so both threads log alike. */
  readonly log: LogOutput;
  /** `--ca-key-kms`: the KMS provider that unwraps the CA key file, built again on this thread. */
  readonly caKeyKms?: Readonly<Record<string, unknown>>;
  /** `up`'s tracing settings: the thread has its own tracer (a tracer cannot cross threads). */
  readonly tracing?: TracingConfig;
  readonly local?: LocalConnection;
  /** The SharedVerifiedMemo's buffer: a CSR the server verified at create is not verified again here. */
  readonly verifiedMemo: SharedArrayBuffer;
}

type FromThread = { readonly type: "started"; readonly ops: string } | { readonly type: "failed"; readonly code: string; readonly message: string };

/**
 * Starts one worker and resolves once its controller manager runs (with its ops address). Each worker gets a channel
 * of its own to the server (`openChannel`): a port belongs to one thread, and a restarted thread needs a new one.
 */
function startThread(data: ThreadData, openChannel: (() => MessagePort) | undefined): Promise<{ worker: Worker; ops: string }> {
  const channel = data.local && openChannel ? openChannel() : undefined;
  const threadData: ThreadData = channel ? { ...data, local: { ...data.local!, channel } } : data;
  const worker = new Worker(compiledScript("src/cli/commands/controller-thread.js", "controller thread script"), { workerData: threadData, ...(channel && { transferList: [channel] }) });
  return new Promise((resolve, reject) => {
    const onExit = (code: number) => reject(new PlatformError("INTERNAL", `the controller thread exited with code ${code} before it started`));
    worker.once("exit", onExit);
    worker.once("error", reject);
    worker.once("message", (msg: FromThread) => {
      worker.off("exit", onExit);
      worker.off("error", reject);
      if (msg.type === "started") resolve({ worker, ops: msg.ops });
      else {
        void worker.terminate();
        reject(new PlatformError(asErrorCode(msg.code, "INTERNAL"), msg.message));
      }
    });
  });
}

export interface SupervisedThread {
  /** Address of the running thread's health and metrics server. */
  readonly ops: string;
  /** How many times the thread was started again after dying. */
  readonly restarts: number;
  /** Asks the thread to stop and waits for it (ending it after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs the thread `start` makes, and starts it again (after `delaysMs[i]`, the last delay repeating) whenever it
 * exits without being asked to; stop() sends `{ type: "stop" }` and waits for the exit.
 */
export async function superviseThread(
  start: () => Promise<{ worker: Worker; ops: string }>,
  logger: Logger,
  delaysMs: readonly number[] = RESTART_DELAYS_MS,
): Promise<SupervisedThread> {
  let stopping = false;
  let current = await start();
  let restarts = 0;
  const watch = (worker: Worker): void => {
    worker.on("error", (err) => logger.error({ err: toPlatformError(err) }, "controller thread failed"));
    worker.once("exit", (code) => {
      if (stopping) return;
      const delay = delaysMs[Math.min(restarts, delaysMs.length - 1)]!;
      logger.error({ code, retryInMs: delay }, "controller thread exited unexpectedly; starting it again");
      setTimeout(() => {
        if (stopping) return;
        start().then(
          (next) => {
            // stop() came while this thread was starting: it is not wanted any more.
            if (stopping) return void next.worker.terminate();
            restarts++;
            current = next;
            watch(next.worker);
            logger.info({ ops: next.ops }, "controller thread running again");
          },
          (err: unknown) => logger.error({ err: toPlatformError(err) }, "controller thread could not start again"),
        );
      }, delay).unref();
    });
  };
  watch(current.worker);
  return {
    get ops() {
      return current.ops;
    },
    get restarts() {
      return restarts;
    },
    async stop(graceMs = 30_000) {
      stopping = true;
      const { worker } = current;
      if (worker.threadId < 0) return; // already exited
      const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
      worker.postMessage({ type: "stop" });
      const timer = setTimeout(() => void worker.terminate(), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

export const controllerThreadComponent: Component = {
  name: "controller-manager",
  async start(ctx: ComponentContext) {
    const wrapper = keyWrapper();
    // Loaded here: the CLI's other commands do not need the PKI modules at start.
    const [{ shareVerifiedMemo }, { SharedVerifiedMemo }] = await Promise.all([import("../../pki/csr-signature.js"), import("../../pki/verified-memo.js")]);
    const memo = new SharedVerifiedMemo();
    shareVerifiedMemo(memo);
    const data: ThreadData = {
      kind: THREAD_KIND,
      names: ctx.names,
      adminConfigPath: ctx.adminConfigPath,
      dataDir: ctx.dataDir,
      caFiles: ctx.caFiles,
      replicated: ctx.replicated,
      log: logOutput(),
      ...(wrapper && { caKeyKms: wrapper.settings }),
      ...(ctx.tracing && { tracing: ctx.tracing }),
      ...(ctx.local && { local: ctx.local }),
      verifiedMemo: memo.buffer,
    };
    const thread = await superviseThread(() => startThread(data, ctx.openChannel), ctx.logger);
    return { summary: `controllers  health and metrics on ${thread.ops} (own thread)`, stop: () => thread.stop() };
  },
};

async function serve(port: NonNullable<typeof parentPort>, data: ThreadData): Promise<void> {
  const [{ createLogger, setLogOutput }, { embeddedControllerSettings, runController }, { startProcessTracer }, { shareVerifiedMemo }, { SharedVerifiedMemo }] = await Promise.all([
    import("../../logger.js"),
    import("./controller.js"),
    import("../tracing-egress-flags.js"),
    import("../../pki/csr-signature.js"),
    import("../../pki/verified-memo.js"),
  ]);
  setLogOutput(data.log);
  shareVerifiedMemo(new SharedVerifiedMemo(data.verifiedMemo));
  if (data.caKeyKms) useKeyWrapper((await import("../../apiserver/encryption/kms-key-wrapper.js")).kmsKeyWrapper(data.caKeyKms as unknown as KmsSettings));
  const logger = createLogger({ name: "controller-manager" });
  const tracer = await startProcessTracer(data.tracing, "platform-ca-controller-manager", logger);
  const abort = new AbortController();
  let ops = "";
  let running: Awaited<ReturnType<typeof runController>>;
  try {
    running = await runController({
      settings: await embeddedControllerSettings(data),
      logger,
      signal: abort.signal,
      onStarted: (address) => (ops = address),
    });
  } catch (err) {
    const e = toPlatformError(err);
    port.postMessage({ type: "failed", code: e.code, message: e.message } satisfies FromThread);
    return;
  }
  // The first syncs (trust bundles published) log right after start; `up` prints its banner once they are done.
  await running.settled(SETTLE_MAX_MS);
  port.postMessage({ type: "started", ops } satisfies FromThread);
  port.on("message", (msg: { type: string }) => {
    if (msg.type !== "stop") return;
    abort.abort();
    // In a worker, process.exit ends this thread only, once the manager has stopped.
    running.stop().then(
      () => tracer.shutdown().finally(() => process.exit(0)),
      (err: unknown) => {
        logger.error({ err: toPlatformError(err) }, "controller manager did not stop cleanly");
        process.exit(1);
      },
    );
  });
}

if (!isMainThread && parentPort && (workerData as Partial<ThreadData> | null)?.kind === THREAD_KIND) void serve(parentPort, workerData as ThreadData);
