// What a set of objects alone keeps alive in a V8 heap snapshot: the bytes no longer reachable from the roots once the
// edges into those objects are cut (weak edges never count). How much the requests in flight hold, say.

/** A parsed `.heapsnapshot`: nodes and edges as V8 writes them (flat number arrays), with the field layout. */
export interface HeapGraph {
  readonly count: number;
  /** Type and name of node `i` (a constructor's name for an object). */
  type(i: number): string;
  name(i: number): string;
  size(i: number): number;
  /** The nodes `i` points to by edges that hold (not weak), with each edge's name. */
  edges(i: number): Iterable<{ readonly name: string; readonly to: number }>;
}

interface Snapshot {
  readonly snapshot: { readonly meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  readonly nodes: number[];
  readonly edges: number[];
  readonly strings: string[];
}

export function heapGraph(text: string): HeapGraph {
  const s = JSON.parse(text) as Snapshot;
  const { node_fields: nf, node_types: [nodeTypes], edge_fields: ef, edge_types: [edgeTypes] } = s.snapshot.meta;
  const N = nf.length;
  const E = ef.length;
  const [TYPE, NAME, SIZE, EDGES] = ["type", "name", "self_size", "edge_count"].map((f) => nf.indexOf(f)) as [number, number, number, number];
  const [ETYPE, ENAME, ETO] = ["type", "name_or_index", "to_node"].map((f) => ef.indexOf(f)) as [number, number, number];
  const count = s.nodes.length / N;
  const first = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    first[i] = e;
    e += s.nodes[i * N + EDGES]! * E;
  }
  first[count] = s.edges.length;
  const weak = edgeTypes.indexOf("weak");
  // Element and hidden edges are named by an index, not a string.
  const indexed = new Set([edgeTypes.indexOf("element"), edgeTypes.indexOf("hidden")]);
  return {
    count,
    type: (i) => nodeTypes[s.nodes[i * N + TYPE]!]!,
    name: (i) => s.strings[s.nodes[i * N + NAME]!]!,
    size: (i) => s.nodes[i * N + SIZE]!,
    *edges(i) {
      for (let e = first[i]!; e < first[i + 1]!; e += E) {
        const type = s.edges[e + ETYPE]!;
        if (type === weak) continue;
        yield { name: indexed.has(type) ? String(s.edges[e + ENAME]) : s.strings[s.edges[e + ENAME]!]!, to: s.edges[e + ETO]! / N };
      }
    },
  };
}

/** Node 0 (the synthetic root) onwards, never entering a node `cut` names. */
function reachable(g: HeapGraph, cut: (i: number) => boolean): Uint8Array {
  const seen = new Uint8Array(g.count);
  const stack = [0];
  seen[0] = 1;
  while (stack.length > 0) {
    for (const { to } of g.edges(stack.pop()!)) {
      if (seen[to] || cut(to)) continue;
      seen[to] = 1;
      stack.push(to);
    }
  }
  return seen;
}

/** The function of a suspended async function (a Generator object), by name. */
export function generatorFunction(g: HeapGraph, i: number): string | undefined {
  for (const e of g.edges(i)) if (e.name === "function") return g.name(e.to);
  return undefined;
}

export interface Retained {
  /** How many live objects `holds` picks. */
  readonly holders: number;
  /** Bytes live only through them: their own, and what nothing else reaches; compiled code and object shapes left out. */
  readonly bytes: number;
}

/** What the objects `holds` picks keep alive that nothing else does. */
export function retainedOnlyBy(g: HeapGraph, holds: (i: number) => boolean): Retained {
  const all = reachable(g, () => false);
  const without = reachable(g, holds);
  let holders = 0;
  let bytes = 0;
  for (let i = 0; i < g.count; i++) {
    if (!all[i]) continue;
    if (holds(i)) holders++;
    const type = g.type(i);
    if (!without[i] && type !== "code" && type !== "object shape") bytes += g.size(i);
  }
  return { holders, bytes };
}
