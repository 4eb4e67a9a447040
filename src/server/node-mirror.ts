/**
 * The cluster's nodes, mirrored into a review worker. A worker cannot read the main thread's
 * informer cache (threads share no objects), and SchedulingWarnings reads every node
 * synchronously, so each worker keeps a copy, brought up to date before each review it is given
 * by a delta: only the nodes whose object changed since the last one this worker got (an informer
 * replaces the object of a node that changed and keeps the others), and the order of the names
 * only when a node came or went. Comparing costs one look-up per node on the main thread; the
 * copying, the nodes that changed.
 */
import type { Node } from '../api/types.js';

/** What the main thread remembers of one worker's copy. */
export interface SentNodes {
  readonly byName: Map<string, Node>;
  names: readonly string[];
}

/** Nodes to replace or add, and, when the list's names changed, the names in order. */
export interface NodeDelta {
  readonly upserts: readonly Node[];
  readonly names?: readonly string[];
}

export function emptySentNodes(): SentNodes {
  return { byName: new Map(), names: [] };
}

/** What `sent` lacks of `current` (undefined: nothing), recorded in `sent` as sent. */
export function nodeDelta(sent: SentNodes, current: readonly Node[]): NodeDelta | undefined {
  const upserts: Node[] = [];
  let sameNames = current.length === sent.names.length;
  for (let i = 0; i < current.length; i++) {
    const node = current[i];
    if (node === undefined) continue;
    const name = node.metadata.name;
    if (sameNames && sent.names[i] !== name) sameNames = false;
    if (sent.byName.get(name) !== node) {
      upserts.push(node);
      sent.byName.set(name, node);
    }
  }
  if (sameNames) {
    return upserts.length === 0 ? undefined : { upserts };
  }
  const names = current.map((node) => node.metadata.name);
  const kept = new Set(names);
  for (const name of sent.byName.keys()) {
    if (!kept.has(name)) sent.byName.delete(name);
  }
  sent.names = names;
  return { upserts, names };
}

/** A worker's copy of the nodes. */
export class NodeMirror {
  readonly #byName = new Map<string, Node>();
  #list: Node[] = [];

  apply(delta: NodeDelta): void {
    for (const node of delta.upserts) this.#byName.set(node.metadata.name, node);
    if (delta.names === undefined) {
      // The same names in the same order: replace the changed entries in place.
      if (delta.upserts.length > 0) this.#list = this.#list.map((node) => this.#byName.get(node.metadata.name) ?? node);
      return;
    }
    const kept = new Set(delta.names);
    for (const name of this.#byName.keys()) {
      if (!kept.has(name)) this.#byName.delete(name);
    }
    this.#list = delta.names.flatMap((name) => {
      const node = this.#byName.get(name);
      return node === undefined ? [] : [node];
    });
  }

  get(name: string): Node | undefined {
    return this.#byName.get(name);
  }

  list(): readonly Node[] {
    return this.#list;
  }
}
