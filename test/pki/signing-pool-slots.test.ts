// WorkerIds: each CA and signer's rules sent once per worker; beyond their bounds the oldest are dropped, forgotten by
// the workers only once the batch being packed is sent, and sent again under a new id when used later.
import type { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import type { PortableRules } from "../../src/pki/pool-rules.js";
import { WorkerIds, type Slot } from "../../src/pki/signing-pool-slots.js";
import type { CaKeyPair } from "../../src/pki/types.js";

interface Sent {
  readonly type: string;
  readonly id: number;
}

/** A slot whose worker records what it is sent. */
function slot(): Slot & { readonly sent: Sent[] } {
  const sent: Sent[] = [];
  const worker = { postMessage: (m: Sent) => sent.push({ type: m.type, id: m.id }) } as unknown as Worker;
  return { worker, inFlight: new Map(), cas: new Set(), dead: false, sent };
}

const forgets = (s: { readonly sent: Sent[] }) => s.sent.filter((m) => m.type === "forget").map((m) => m.id);

describe.each([
  { what: "signers' rules", bound: 16, kind: "rules", id: (ids: WorkerIds, s: Slot, i: number) => ids.ruleId(s, RULES[i]!) },
  { what: "CAs", bound: 8, kind: "ca", id: (ids: WorkerIds, s: Slot, i: number) => ids.caId(s, CAS[i]!) },
])("WorkerIds, $what", ({ bound, kind, id }) => {
  it("sends each once per worker under one id", () => {
    const ids = new WorkerIds();
    const [a, b] = [slot(), slot()];
    const first = id(ids, a, 0);
    expect(id(ids, a, 0)).toBe(first);
    expect(id(ids, b, 0)).toBe(first);
    expect(id(ids, a, 1)).not.toBe(first);
    expect(a.sent).toEqual([{ type: kind, id: first }, { type: kind, id: first + 1 }]);
    expect(b.sent).toEqual([{ type: kind, id: first }]);
  });

  it(`drops the oldest beyond ${bound}, forgotten only after the packed batch, and sends it again under a new id`, () => {
    const ids = new WorkerIds();
    const [a, b, idle] = [slot(), slot(), slot()];
    const first = id(ids, a, 0);
    id(ids, b, 0);
    for (let i = 1; i <= bound; i++) id(ids, a, i);
    // The batch being packed may still name the dropped one: nothing is forgotten yet.
    expect(forgets(a)).toEqual([]);
    ids.forgetDropped([a, b, idle]);
    expect(forgets(a)).toEqual([first]);
    expect(forgets(b)).toEqual([first]);
    expect(idle.sent).toEqual([]);
    ids.forgetDropped([a, b, idle]);
    expect(forgets(a)).toEqual([first]);
    const again = id(ids, a, 0);
    expect(again).toBeGreaterThan(first + bound);
    expect(a.sent.at(-1)).toEqual({ type: kind, id: again });
    // Taking it back in dropped the next oldest, the second one sent.
    ids.forgetDropped([a, b, idle]);
    expect(forgets(a)).toEqual([first, first + 1]);
  });
});

const RULES = Array.from({ length: 20 }, (_, i) => ({ module: `rules-${i}` }) as unknown as PortableRules);
const CAS = Array.from({ length: 20 }, (_, i) => ({ certDer: Uint8Array.of(i) }) as unknown as CaKeyPair);
