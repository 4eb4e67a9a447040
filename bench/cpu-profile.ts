/**
 * Reads a V8 `.cpuprofile` (written by `node --cpu-prof`) and ranks where the time went: the top
 * functions by self time, and self time grouped by where the code lives (a dist/ directory, a
 * package under node_modules, Node's internals).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface Ranked {
  readonly name: string;
  readonly where: string;
  /** Share of the busy (non-idle) samples. */
  readonly share: number;
}

export interface ProfileSummary {
  readonly busyMs: number;
  readonly functions: readonly Ranked[];
  readonly areas: readonly Ranked[];
  /** The project's own functions (dist/) by inclusive time: what each stage costs with its callees. */
  readonly stages: readonly Ranked[];
}

function shortUrl(url: string): string {
  if (url === '') return '';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules !== -1) return url.slice(modules + '/node_modules/'.length);
  const dist = url.indexOf('/dist/');
  if (dist !== -1) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

function area(url: string): string {
  if (url === '') return '(V8 / native)';
  if (url.startsWith('node:')) return 'node: internals';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules !== -1) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return (parts[0]?.startsWith('@') === true ? `${parts[0]}/${parts[1] ?? ''}` : parts[0]) ?? url;
  }
  const dist = url.indexOf('/dist/');
  if (dist !== -1) {
    const parts = url.slice(dist + 1).split('/');
    return parts.length > 2 ? `${parts[0] ?? ''}/${parts[1] ?? ''}/` : parts.join('/');
  }
  return url;
}

export function summarizeProfile(path: string, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    // timeDeltas[i] is the time from sample i-1 to sample i; charge it to sample i's frame.
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const functions = new Map<string, { name: string; where: string; micros: number }>();
  const areas = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of selfMicros) {
    const node = byId.get(id);
    if (node === undefined) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    busy += micros;
    const name = functionName === '' ? '(anonymous)' : functionName;
    const where = url === '' ? '' : `${shortUrl(url)}:${lineNumber + 1}`;
    const key = `${name} ${where}`;
    const entry = functions.get(key) ?? { name, where, micros: 0 };
    entry.micros += micros;
    functions.set(key, entry);
    const group = area(url);
    areas.set(group, (areas.get(group) ?? 0) + micros);
  }
  // Inclusive time: each sample counts once for every distinct function on its stack.
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map<string, { name: string; where: string; micros: number }>();
  for (const [id, micros] of selfMicros) {
    const seen = new Set<string>();
    for (let current: number | undefined = id; current !== undefined; current = parent.get(current)) {
      const frame = byId.get(current)?.callFrame;
      if (frame === undefined || !frame.url.includes('/dist/') || frame.functionName === '(idle)') continue;
      const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
      const where = `${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
      const key = `${name} ${where}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = inclusive.get(key) ?? { name, where, micros: 0 };
      entry.micros += micros;
      inclusive.set(key, entry);
    }
  }
  const rank = <T extends { micros: number }>(entries: Iterable<T>): T[] => [...entries].sort((a, b) => b.micros - a.micros);
  return {
    busyMs: busy / 1000,
    functions: rank(functions.values())
      .slice(0, top)
      .map((entry) => ({ name: entry.name, where: entry.where, share: entry.micros / busy })),
    areas: rank([...areas].map(([name, micros]) => ({ name, micros })))
      .slice(0, 12)
      .map((entry) => ({ name: entry.name, where: '', share: entry.micros / busy })),
    stages: rank(inclusive.values())
      .slice(0, top)
      .map((entry) => ({ name: entry.name, where: entry.where, share: entry.micros / busy })),
  };
}
