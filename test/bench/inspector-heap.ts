// The heaps of another node process's threads after a full collection each, through its inspector (`node --inspect`):
// what a leak check reads, where a heap figure taken between collections says more about the collector's timing; and a
// heap snapshot of its main thread.
// Needs WebSocket (node 20: `--experimental-websocket`).

interface Message {
  readonly id?: number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly message: string };
}

type Call = (method: string, params?: Record<string, unknown>) => Promise<Record<string, unknown>>;

/** Heap used after a full collection, in bytes: the main thread's, and each worker thread's with its script's URL. */
export interface ThreadHeaps {
  readonly main: number;
  readonly workers: readonly { readonly url: string; readonly used: number }[];
}

/** A CDP session over `send`: replies matched by id, in order of the calls. */
function session(send: (text: string) => void): { call: Call; receive(message: Message): void } {
  const waiting = new Map<number, (m: Message) => void>();
  let next = 0;
  return {
    call: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = ++next;
        waiting.set(id, (m) => (m.error ? reject(new Error(`${method}: ${m.error.message}`)) : resolve(m.result ?? {})));
        send(JSON.stringify({ id, method, params }));
      }),
    receive(m) {
      if (m.id === undefined) return;
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    },
  };
}

async function heapAfterCollection(call: Call): Promise<number> {
  await call("HeapProfiler.collectGarbage");
  return (await call("Runtime.getHeapUsage")).usedSize as number;
}

/**
 * A connection to the inspector of the process listening on 127.0.0.1:`port`: its main thread's session, its workers'
 * sessions as they are announced, and the main thread's events (`onEvent`).
 */
async function attach(port: number, onEvent?: (m: Message) => void) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { readonly webSocketDebuggerUrl: string }[];
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error(`cannot reach the inspector on port ${port}`));
  });
  const main = session((text) => ws.send(text));
  // Each worker is a session of its own inside this connection (NodeWorker.attachedToWorker), its messages wrapped.
  const workers = new Map<string, { url: string; s: ReturnType<typeof session> }>();
  ws.onmessage = (event) => {
    const m = JSON.parse(String(event.data)) as Message;
    if (m.method === "NodeWorker.attachedToWorker") {
      const sessionId = m.params!.sessionId as string;
      const url = (m.params!.workerInfo as { url: string }).url;
      workers.set(sessionId, { url, s: session((message) => void main.call("NodeWorker.sendMessageToWorker", { sessionId, message })) });
    } else if (m.method === "NodeWorker.receivedMessageFromWorker") {
      workers.get(m.params!.sessionId as string)?.s.receive(JSON.parse(m.params!.message as string) as Message);
    } else if (m.id === undefined) onEvent?.(m);
    else main.receive(m);
  };
  return { main, workers, close: () => ws.close() };
}

/** Collects garbage in every thread of the process whose inspector listens on 127.0.0.1:`port`, and reads each heap. */
export async function threadHeaps(port: number): Promise<ThreadHeaps> {
  const { main, workers, close } = await attach(port);
  try {
    await main.call("NodeWorker.enable", { waitForDebuggerOnStart: false });
    // The running workers are announced as the enable is handled; a moment for the last of them.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const heaps: { url: string; used: number }[] = [];
    for (const w of workers.values()) heaps.push({ url: w.url, used: await heapAfterCollection(w.s.call) });
    return { main: await heapAfterCollection(main.call), workers: heaps };
  } finally {
    close();
  }
}

/**
 * A heap snapshot of the main thread of the process whose inspector listens on 127.0.0.1:`port`, as its JSON text (V8
 * collects garbage first, so it holds what is live). The thread stops while it is taken (a second or two for 40 MB).
 */
export async function mainHeapSnapshot(port: number): Promise<string> {
  const chunks: string[] = [];
  const { main, close } = await attach(port, (m) => {
    if (m.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(m.params!.chunk as string);
  });
  try {
    await main.call("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
    return chunks.join("");
  } finally {
    close();
  }
}
