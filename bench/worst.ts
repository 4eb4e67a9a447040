/**
 * The worst review (`npm run bench -- --only worst`, and a section of the full run): each review
 * of bench/worst-reviews.ts against the built server (dist/, as the rest of the bench), in a
 * cluster of 5,000 nodes and 10,000 namespaces with the shipped policies, one request at a time.
 *
 * - Time: from the client, on one keep-alive connection with nothing else in flight — the time
 *   from writing the request to reading the last byte of the answer, so it includes sending a few
 *   MiB over loopback TLS. A warm-up send first, then up to five timed ones (fewer when one
 *   takes seconds); p50 and max of the timed ones (the warm-up's time too when it is the only one).
 * - Heap: the server runs with --trace-gc (bench/servers.ts): the V8 heap only shrinks at a
 *   collection, so the largest "before" size of a collection while the review is answered is the
 *   largest the heap reached. Above idle: minus the heap after the last collection before the
 *   review (the live set of a warmed-up server). No code in the server changes for this.
 * - RSS: VmHWM after resetting it (/proc/<pid>/clear_refs) just before the review, minus VmRSS at
 *   that moment: what the process took from the machine, body buffers and all (an upper bound of
 *   the heap's share, and what a memory limit counts).
 *
 * A fresh server per review, so that one review's heap (or one that takes a minute) does not
 * shape the next one's numbers.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Payload } from './payloads.js';
import {
  checkAnswer,
  peakResidentBytes,
  residentBytes,
  resetPeakResident,
  serverCore,
  startServer,
  type Certificate,
  type GcEvent,
  type RunningServer,
  type ServerSpec,
} from './servers.js';
import { maxBodyBytes } from '../src/http/app.js';
import { maxObjectBytes, worstReviews, type WorstReview } from './worst-reviews.js';

/** The targets: kube-apiserver's webhook timeout is seconds, but one review holds the only event loop. */
export const worstTargets = { ms: 250, heapMib: 64 } as const;

export interface WorstRow {
  readonly review: WorstReview;
  readonly bodyBytes: number;
  readonly sends: number;
  readonly p50Ms: number;
  readonly maxMs: number;
  readonly heapAboveIdleMib: number;
  readonly rssAboveIdleMib: number;
  readonly answer: string;
  /** The floor of any JSON webhook for this body, measured in the bench's own process: see parseFloor. */
  readonly parse: ParseFloor;
}

export interface ParseFloor {
  /** The least time of three JSON.parse calls on the body's text. */
  readonly ms: number;
  /** What the parsed value holds on the heap: used heap after a full collection with it alive, less before. */
  readonly heldMib: number;
}

const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

/**
 * What parsing the body alone costs, which no review of it can go below: V8's JSON.parse of the
 * text, and the heap the parsed value holds. In the bench's process, on the same machine at the
 * same moment as the review it stands beside.
 */
export function parseFloor(body: string): ParseFloor {
  let ms = Infinity;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    JSON.parse(body);
    ms = Math.min(ms, performance.now() - started);
  }
  collectGarbage();
  const before = getHeapStatistics().used_heap_size;
  const parsed: unknown = JSON.parse(body);
  collectGarbage();
  const held = getHeapStatistics().used_heap_size - before;
  // Keeps the value alive through the second collection.
  if (parsed === undefined) throw new Error('unreachable');
  return { ms, heldMib: held / 1024 / 1024 };
}

export interface WorstContext {
  readonly certificate: Certificate;
  /** A cluster state of 5,000 nodes and 10,000 namespaces. */
  readonly clusterStateFile: string;
  readonly policiesDir: string;
  /** Small reviews to warm the server up with before each worst one. */
  readonly warmup: readonly Payload[];
  readonly note: (text: string) => void;
  /** Only the reviews whose shape contains this text. */
  readonly filter?: string;
}

/** V8 prints MB of 10^6 bytes; the tables speak MiB. */
const mbToMib = 1e6 / 1024 / 1024;

export async function measureWorstReviews(context: WorstContext): Promise<WorstRow[]> {
  const rows: WorstRow[] = [];
  for (const review of worstReviews()) {
    if (context.filter !== undefined && !review.shape.includes(context.filter)) continue;
    const body = review.build();
    if (Buffer.byteLength(body) > maxBodyBytes) {
      context.note(`${review.shape} ${review.path}: over the body limit, measured in process`);
      rows.push(measureInProcess(review, body, context));
      continue;
    }
    const spec: ServerSpec = {
      label: `worst: ${review.shape} ${review.path}`,
      kind: 'tolerator',
      logLevel: 'warn',
      policiesDir: context.policiesDir,
      clusterStateFile: context.clusterStateFile,
      traceGc: true,
    };
    context.note(`starting ${spec.label}`);
    const server = await startServer(spec, context.certificate);
    try {
      rows.push(await measureOne(server, review, body, context));
    } finally {
      await server.stop();
    }
  }
  return rows;
}

/**
 * A review whose body this build's server refuses unread (413, over src/http/app.ts's limit):
 * bench/review-probe.ts answers it in a process of its own with the built code, the same cluster
 * state and policies, from its bytes in hand (no TLS, no HTTP), on core 0 as the servers run.
 */
function measureInProcess(review: WorstReview, body: string, context: WorstContext): WorstRow {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-probe-'));
  try {
    const file = join(dir, 'body.json');
    writeFileSync(file, body);
    const probe = spawnSync(
      'taskset',
      [
        '-c',
        serverCore,
        process.execPath,
        '--expose-gc',
        '--enable-experimental-regexp-engine-on-excessive-backtracks',
        '--import',
        'tsx',
        'bench/review-probe.ts',
        file,
        review.path,
        context.clusterStateFile,
        context.policiesDir,
        '5',
      ],
      { cwd: new URL('..', import.meta.url).pathname, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024, timeout: 600_000 },
    );
    if (probe.status !== 0) throw new Error(`${review.shape} ${review.path}: the in-process probe failed: ${probe.stderr.slice(-2000)}`);
    const measured = JSON.parse(probe.stdout.trim().split('\n').at(-1) ?? '{}') as {
      times: number[];
      heapAboveIdleMib: number;
      rssAboveIdleMib: number;
      answer: string;
    };
    const sorted = [...measured.times].sort((a, b) => a - b);
    context.note(`${review.shape} ${review.path}: ${Math.round(sorted.at(-1) ?? 0)} ms in process`);
    return {
      review,
      bodyBytes: Buffer.byteLength(body),
      sends: sorted.length,
      p50Ms: sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN,
      maxMs: sorted.at(-1) ?? Number.NaN,
      heapAboveIdleMib: measured.heapAboveIdleMib,
      rssAboveIdleMib: measured.rssAboveIdleMib,
      answer: `${measured.answer} (in process: over this build's ${maxBodyBytes / 1024 / 1024} MiB body limit)`,
      parse: parseFloor(body),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measureOne(server: RunningServer, review: WorstReview, body: string, context: WorstContext): Promise<WorstRow> {
  for (let i = 0; i < 20; i++) for (const payload of context.warmup) await checkAnswer(server, payload, context.certificate);
  await sleep(200);
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: context.certificate.ca });
  try {
    const before = [...server.gcEvents];
    const idleRss = residentBytes(server.pid);
    resetPeakResident(server.pid);
    const started = performance.now();
    const bodyBytes = Buffer.byteLength(body);
    const first = await send(server, agent, review, body);
    // Heap and RSS are the first send's: the collection that follows its answer may come a
    // moment later, so a pause; then its peak is read before anything else is sent. (Over five
    // sends back to back, V8, with the heap limit of a large machine, lets each one's garbage
    // pile up in the old generation, and the peak measured the pile rather than a review.)
    await sleep(300);
    const during = server.gcEvents.filter((event) => event.at >= started);
    // Per thread (the main one and a review worker each have a heap): see heapAboveIdle.
    const heapAboveIdleMb = heapAboveIdle(before, during);
    const peakRss = peakResidentBytes(server.pid);
    const times: number[] = [];
    // Five timed sends; fewer when one takes seconds (the quadratic ones take minutes).
    const timed = first.ms < 2_000 ? 5 : first.ms < 20_000 ? 1 : 0;
    context.note(`${review.shape} ${review.path}: ${Math.round(first.ms)} ms, ${timed} more`);
    for (let i = 0; i < timed; i++) times.push((await send(server, agent, review, body)).ms);
    if (times.length === 0) times.push(first.ms);
    const sorted = [...times].sort((a, b) => a - b);
    return {
      review,
      bodyBytes,
      sends: times.length,
      p50Ms: sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN,
      maxMs: sorted.at(-1) ?? Number.NaN,
      heapAboveIdleMib: heapAboveIdleMb * mbToMib,
      rssAboveIdleMib: (peakRss - idleRss) / 1024 / 1024,
      answer: first.answer,
      parse: parseFloor(body),
    };
  } finally {
    agent.destroy();
  }
}

/**
 * The most any one heap grew while the review was answered, MB: per isolate (the main thread's,
 * and a review worker's, which decides large reviews on a heap of its own), its largest size
 * before a collection above its size after the last collection before the review; for a worker
 * with no collection before it, above the smallest size a collection left it at meanwhile (its
 * heap between reviews).
 */
function heapAboveIdle(before: readonly GcEvent[], during: readonly GcEvent[]): number {
  let most = 0;
  for (const isolate of new Set(during.map((event) => event.isolate))) {
    const mine = during.filter((event) => event.isolate === isolate);
    const idle = before.filter((event) => event.isolate === isolate).at(-1)?.afterMb ?? Math.min(...mine.map((event) => event.afterMb));
    most = Math.max(most, Math.max(idle, ...mine.map((event) => event.beforeMb)) - idle);
  }
  return most;
}

/** One review on the agent's single keep-alive connection; the answer summarised for the table. */
function send(server: RunningServer, agent: Agent, review: WorstReview, body: string): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: server.port,
        path: review.path,
        method: 'POST',
        agent,
        servername: 'localhost',
        timeout: 600_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const ms = performance.now() - started;
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 500) {
            // Undecided: the server answered within its bounds and the webhook's failurePolicy
            // applies (a review worker's heap exhausted, a deadline): a row that misses its target.
            const message = (JSON.parse(text) as { message?: unknown }).message;
            resolve({ ms, answer: `undecided: HTTP 500 (${typeof message === 'string' ? message.slice(0, 120) : 'no message'})` });
            return;
          }
          if (res.statusCode !== 200) {
            reject(new Error(`${review.shape} ${review.path}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
            return;
          }
          const response = (JSON.parse(text) as { response?: { allowed?: boolean; warnings?: string[]; patch?: string } }).response;
          const allowed = response?.allowed === true;
          const warnings = response?.warnings?.length ?? 0;
          const patch = response?.patch === undefined ? 0 : Buffer.byteLength(response.patch, 'base64');
          const answer = [
            allowed ? 'allowed' : 'denied',
            ...(patch > 0 ? [`patch ${kib(patch)}`] : []),
            ...(warnings > 0 ? [`${warnings} warning${warnings === 1 ? '' : 's'}`] : []),
            `answer ${kib(Buffer.byteLength(text))}`,
          ];
          resolve({ ms, answer: answer.join(', ') });
        });
      },
    );
    req.on('timeout', () => {
      req.destroy(new Error(`${review.shape} ${review.path}: no answer within 600 s`));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function kib(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(0)} KiB`;
}

/** The section of bench/RESULTS.md, between markers so that `--only worst` can replace it alone. */
export function worstSection(rows: readonly WorstRow[], header: readonly string[]): string[] {
  const lines: string[] = [worstBegin, '## The worst review', ''];
  lines.push(...header, '');
  lines.push(
    `Each review on its own fresh server (5,000 nodes, 10,000 namespaces, the shipped policies; tenant namespace \`ml\`, group \`gpu\`), one request at a time on one keep-alive connection. Objects up to ${maxObjectBytes / 1024 / 1024} MiB (kube-apiserver's MaxRequestBodyBytes); the UPDATE carries two. Time from the client: writing the request to the answer's last byte, TLS over loopback included. Heap: V8's heap in use (\`--trace-gc\`: the largest size before any collection while the first send is answered, garbage not yet collected included) above its size after the last collection before it. RSS: VmHWM (reset just before the first send) above VmRSS then. A body over this build's body limit (src/http/app.ts) is answered in a process of its own from its bytes in hand instead (bench/review-probe.ts: the built code, the same cluster and policies; heap and RSS measured the same way). Beside each review, the floor of any JSON webhook for its body, measured in the bench's process at the same moment: JSON.parse of its text alone, and the heap the parsed value holds. Targets: under ${worstTargets.ms} ms, heap under ${worstTargets.heapMib} MiB above idle; a miss says by how much.`,
    '',
  );
  lines.push(
    '| review | webhook | body MiB | sends | p50 ms | max ms | JSON.parse alone ms | heap above idle MiB | parsed body held MiB | RSS above idle MiB | answer | met |',
  );
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |');
  const missed = new Map<string, string>();
  for (const row of rows) {
    const over = [
      ...(row.answer.startsWith('undecided') ? ['undecided'] : []),
      ...(row.maxMs < worstTargets.ms ? [] : [`+${Math.round(row.maxMs - worstTargets.ms).toLocaleString('en-US')} ms`]),
      ...(row.heapAboveIdleMib < worstTargets.heapMib ? [] : [`+${(row.heapAboveIdleMib - worstTargets.heapMib).toFixed(1)} MiB`]),
    ];
    if (over.length > 0 && row.review.why !== undefined) missed.set(row.review.shape, row.review.why);
    lines.push(
      `| ${row.review.shape} | ${row.review.path}${row.review.operation === 'UPDATE' ? ' (UPDATE)' : ''} | ${(row.bodyBytes / 1024 / 1024).toFixed(2)} | ${row.sends} | ${Math.round(row.p50Ms).toLocaleString('en-US')} | ${Math.round(row.maxMs).toLocaleString('en-US')} | ${row.parse.ms.toFixed(0)} | ${row.heapAboveIdleMib.toFixed(1)} | ${row.parse.heldMib.toFixed(1)} | ${row.rssAboveIdleMib.toFixed(1)} | ${row.answer} | ${over.length === 0 ? 'yes' : `**no** (${over.join(', ')})`} |`,
    );
  }
  if (missed.size > 0) {
    lines.push('', 'Why the shapes that miss a target miss it:', '');
    for (const [shape, why] of missed) lines.push(`- ${shape}: ${why}`);
  }
  lines.push('', worstEnd);
  return lines;
}

export const worstBegin = '<!-- worst-review: written by `npm run bench -- --only worst` -->';
export const worstEnd = '<!-- /worst-review -->';

/** `text` with its worst-review section replaced by `section` (or `section` put before the targets, or at the end). */
export function spliceWorstSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(worstBegin);
  const end = text.indexOf(worstEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + worstEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
