/**
 * One review in process, for the worst-review rows whose body this build's server refuses unread
 * (over its body limit, src/http/app.ts): what the review costs once its bytes are in hand, with
 * the built code (dist/) and the same cluster state and policies as the server would have.
 *
 *   node --expose-gc --import tsx bench/review-probe.ts <body file> </mutate|/validate> <cluster state> <policies> <sends> [build]
 *
 * `build` is the directory of the compiled code, dist by default: another build's, to compare two.
 *
 * After a warm-up (the realistic mix, as bench/worst.ts sends the server), each send decodes and
 * parses the body, runs the pipeline of its webhook and serialises the answer, timed from the
 * first byte of the body to the answer's last. Heap and RSS are the first send's, as
 * bench/worst.ts measures the server: after a full collection, V8's heap in use at its largest
 * (before any collection during the send, v8.GCProfiler, or at its end) above its size then;
 * VmHWM, reset before the send, above VmRSS then. Prints one JSON line: { times,
 * heapAboveIdleMib, rssAboveIdleMib, answer }.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { mixPayloads } from './payloads.js';

const [bodyFile, path, clusterStateFile, policiesDir, sendsText, build = 'dist'] = process.argv.slice(2);
if (bodyFile === undefined || (path !== '/mutate' && path !== '/validate') || clusterStateFile === undefined || policiesDir === undefined) {
  throw new Error('usage: review-probe.ts <body file> </mutate|/validate> <cluster state> <policies> <sends>');
}
const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error('review-probe.ts needs node --expose-gc');

const dist = new URL(`../${build}/`, import.meta.url);
interface Built {
  parseFlags: (args: readonly string[], flags: unknown) => unknown;
  admissionFlags: unknown;
  readAdmissionSettings: (flags: unknown) => { clusterStateFile?: string; policiesDir?: string };
  pipelineFor: (
    settings: unknown,
    facts: unknown,
    policies: unknown,
  ) => {
    review(parsed: unknown, sides: readonly string[]): Promise<{ decision: { allowed: boolean; patch?: readonly unknown[] } }>;
  };
  startTenancy: (dir: string | undefined, logger: unknown, metrics: undefined, watch: boolean) => { current: unknown };
  loadClusterStateFile: (file: string, logger: unknown) => unknown;
  parseAdmissionReview: (body: Uint8Array) => { apiVersion: string; uid: string };
  buildAdmissionResponse: (apiVersion: string, uid: string, decision: unknown) => unknown;
}
const load = async (module: string): Promise<Record<string, unknown>> =>
  (await import(new URL(module, dist).href)) as Record<string, unknown>;
const built = {
  ...(await load('cli/flags.js')),
  ...(await load('cli/options.js')),
  ...(await load('admission/pipeline-settings.js')),
  ...(await load('server/tenancy-policies.js')),
  ...(await load('kube/cluster-state-file.js')),
  ...(await load('admission/review.js')),
  ...(await load('admission/response.js')),
} as unknown as Built;
const silent = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined, child: () => silent };
const settings = built.readAdmissionSettings(
  built.parseFlags(['--policies', policiesDir, '--cluster-state', clusterStateFile], built.admissionFlags),
);
const pipeline = built.pipelineFor(
  settings,
  built.loadClusterStateFile(clusterStateFile, silent),
  built.startTenancy(settings.policiesDir, silent, undefined, false).current,
);

async function answer(body: Uint8Array, side: string): Promise<string> {
  const parsed = built.parseAdmissionReview(body);
  const { decision } = await pipeline.review(parsed, [side]);
  return JSON.stringify(built.buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision));
}

for (let i = 0; i < 20; i++) {
  for (const payload of mixPayloads()) await answer(Buffer.from(payload.body), payload.path === '/mutate' ? 'mutate' : 'validate');
}

const body = readFileSync(bodyFile);
const side = path === '/mutate' ? 'mutate' : 'validate';
const sends = Math.max(1, Number(sendsText ?? 1));
const times: number[] = [];
let heapAboveIdle = 0;
let rssAboveIdle = 0;
let summary = '';
for (let i = 0; i < sends; i++) {
  collect();
  const idleHeap = getHeapStatistics().used_heap_size;
  const idleRss = statusBytes('VmRSS');
  writeFileSync('/proc/self/clear_refs', '5');
  const profiler = new GCProfiler();
  profiler.start();
  const started = performance.now();
  const text = await answer(body, side);
  times.push(performance.now() - started);
  const endHeap = getHeapStatistics().used_heap_size;
  const gcs = profiler.stop().statistics;
  if (i === 0) {
    const peakHeap = Math.max(endHeap, ...gcs.map((gc) => gc.beforeGC.heapStatistics.usedHeapSize));
    heapAboveIdle = peakHeap - idleHeap;
    rssAboveIdle = statusBytes('VmHWM') - idleRss;
    summary = summarise(text);
  }
  // One that takes seconds is not repeated.
  if (times[0] !== undefined && times[0] > 2_000) break;
}
process.stdout.write(
  `${JSON.stringify({ times, heapAboveIdleMib: heapAboveIdle / 1024 / 1024, rssAboveIdleMib: rssAboveIdle / 1024 / 1024, answer: summary })}\n`,
);

function statusBytes(field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

/** As bench/worst.ts summarises the server's answer. */
function summarise(text: string): string {
  const response = (JSON.parse(text) as { response?: { allowed?: boolean; warnings?: string[]; patch?: string } }).response;
  const patch = response?.patch === undefined ? 0 : Buffer.byteLength(response.patch, 'base64');
  const warnings = response?.warnings?.length ?? 0;
  return [
    response?.allowed === true ? 'allowed' : 'denied',
    ...(patch > 0 ? [`patch ${kib(patch)}`] : []),
    ...(warnings > 0 ? [`${warnings} warning${warnings === 1 ? '' : 's'}`] : []),
    `answer ${kib(Buffer.byteLength(text))}`,
  ].join(', ');
}

function kib(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(0)} KiB`;
}
