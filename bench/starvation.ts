/**
 * Starvation (`npm run bench -- --only starvation`, and a section of the full run): how long an
 * ordinary review waits while ten large ones are in flight. The API server sends a replica every
 * pod write of the cluster on whatever connections it has open; a tenant who makes it send ten
 * valid 3 MiB reviews at once (a Deployment scaled up, a dry-run loop) must not make the pod
 * writes of every other namespace wait past the webhooks' `timeoutSeconds` (5 s), after which the
 * API server applies the failurePolicy: `Fail` on the validating webhook.
 *
 * One server (dist/, as the rest of the bench) on both cores (no `taskset` here: the point is
 * what a replica does with the cores it has), 5,000 nodes and 10,000 namespaces, the shipped
 * policies. Ten connections each keep one large review in flight (the next one is sent when the
 * answer arrives), in turn: the 3 MiB containers pod, the 3 MiB pod of tolerations with distinct
 * keys and the UPDATE of two 3 MiB objects (bench/worst-reviews.ts, validating side: pods as
 * the mutating webhook left them). Meanwhile one more connection sends the ordinary reviews of
 * the mix one at a time, 50 ms apart, and the bench records how long each waits for its answer.
 * The same ordinary reviews with nothing else in flight, in the same run, are the floor.
 *
 * "Both cores busy": the ten large reviews keep the server's threads busy (as many as it has) and
 * the bench process sends them over TLS from the same two cores.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Payload } from './payloads.js';
import { checkAnswer, cpuSeconds, peakResidentBytes, residentBytes, resetPeakResident, startServer, type Certificate } from './servers.js';
import { worstReviews } from './worst-reviews.js';

export interface StarvationContext {
  readonly certificate: Certificate;
  /** A cluster state of 5,000 nodes and 10,000 namespaces. */
  readonly clusterStateFile: string;
  readonly policiesDir: string;
  /** The ordinary reviews, sent in turn. */
  readonly small: readonly Payload[];
  readonly seconds: number;
  readonly note: (text: string) => void;
}

export interface LatencySummary {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Answers that were not 200, by status (0: no answer, the connection failed). */
  readonly statuses: Readonly<Record<string, number>>;
}

export interface StarvationResult {
  readonly idle: LatencySummary;
  readonly loaded: LatencySummary;
  readonly large: LatencySummary;
  readonly largeBodyMib: readonly number[];
  /** CPU seconds of the server (all threads) per wall second while loaded: 2.0 is both cores. */
  readonly serverCores: number;
  readonly peakRssMib: number;
  readonly idleRssMib: number;
}

/** The large reviews: valid pods of 3 MiB (and an UPDATE of two) as the validating webhook gets them. */
const largeShapes = [
  'containers with resources',
  'tolerations, distinct keys',
  'UPDATE, object and oldObject of 3 MiB differing everywhere',
] as const;
/** How many large reviews are kept in flight: the ten. */
const largeInFlight = 10;
/** Pause between two ordinary reviews: about 20 a second, enough samples for a p99 in 15 s. */
const smallPauseMs = 50;

export async function measureStarvation(context: StarvationContext): Promise<StarvationResult> {
  const large = largeShapes.map((shape) => {
    const review = worstReviews().find((candidate) => candidate.shape === shape && candidate.path === '/validate');
    if (review === undefined) throw new Error(`bench/worst-reviews.ts has no ${shape} on /validate`);
    return { path: review.path, body: Buffer.from(review.build()) };
  });
  const server = await startServer(
    {
      label: 'starvation: tolerator (log warn), both cores',
      kind: 'tolerator',
      logLevel: 'warn',
      policiesDir: context.policiesDir,
      clusterStateFile: context.clusterStateFile,
      cores: 'all',
    },
    context.certificate,
  );
  try {
    for (let i = 0; i < 20; i++) for (const payload of context.small) await checkAnswer(server, payload, context.certificate);
    const smallAgent = new Agent({ keepAlive: true, maxSockets: 1, ca: context.certificate.ca });
    const largeAgent = new Agent({ keepAlive: true, maxSockets: largeInFlight, ca: context.certificate.ca });
    try {
      context.note(`starvation: ordinary reviews alone, ${context.seconds} s`);
      const idleRss = residentBytes(server.pid);
      const idle = await smallReviews(server.port, smallAgent, context.small, context.seconds * 1000);

      context.note(`starvation: ordinary reviews while ${largeInFlight} large ones are in flight, ${context.seconds} s`);
      resetPeakResident(server.pid);
      const stop = { at: Number.POSITIVE_INFINITY };
      const largeTimes: Timed[] = [];
      const senders = Array.from({ length: largeInFlight }, async (_, index) => {
        for (let turn = index; performance.now() < stop.at; turn++) {
          const next = large[turn % large.length];
          if (next === undefined) break;
          largeTimes.push(await post(server.port, largeAgent, next.path, next.body));
        }
      });
      // Let the ten reach the server before the ordinary reviews are timed.
      await sleep(1_000);
      const cpuBefore = cpuSeconds(server.pid);
      const wallBefore = performance.now();
      const loaded = await smallReviews(server.port, smallAgent, context.small, context.seconds * 1000);
      const serverCores = (cpuSeconds(server.pid) - cpuBefore) / ((performance.now() - wallBefore) / 1000);
      stop.at = performance.now();
      await Promise.all(senders);
      return {
        idle,
        loaded,
        large: summarize(largeTimes),
        largeBodyMib: large.map((review) => review.body.length / 1024 / 1024),
        serverCores,
        peakRssMib: peakResidentBytes(server.pid) / 1024 / 1024,
        idleRssMib: idleRss / 1024 / 1024,
      };
    } finally {
      smallAgent.destroy();
      largeAgent.destroy();
    }
  } finally {
    await server.stop();
  }
}

interface Timed {
  readonly ms: number;
  readonly status: number;
}

async function smallReviews(port: number, agent: Agent, payloads: readonly Payload[], durationMs: number): Promise<LatencySummary> {
  const times: Timed[] = [];
  const bodies = payloads.map((payload) => ({ path: payload.path, body: Buffer.from(payload.body) }));
  const end = performance.now() + durationMs;
  for (let turn = 0; performance.now() < end; turn++) {
    const next = bodies[turn % bodies.length];
    if (next === undefined) break;
    times.push(await post(port, agent, next.path, next.body));
    await sleep(smallPauseMs);
  }
  return summarize(times);
}

/** One POST; its time from the request written to the answer's last byte, and its status (0: failed). */
function post(port: number, agent: Agent, path: string, body: Buffer): Promise<Timed> {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        servername: 'localhost',
        timeout: 120_000,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 });
        });
      },
    );
    req.on('timeout', () => {
      req.destroy();
    });
    req.on('error', () => {
      resolve({ ms: performance.now() - started, status: 0 });
    });
    req.end(body);
  });
}

function summarize(times: readonly Timed[]): LatencySummary {
  const sorted = times.map((t) => t.ms).sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const statuses: Record<string, number> = {};
  for (const t of times) statuses[String(t.status)] = (statuses[String(t.status)] ?? 0) + 1;
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1) ?? Number.NaN, statuses };
}

/** The target: an ordinary review answered within 1 s while large ones are in flight. */
export const starvationTargetMs = 1_000;

export const starvationBegin = '<!-- starvation: written by `npm run bench -- --only starvation` -->';
export const starvationEnd = '<!-- /starvation -->';

function statusText(statuses: Readonly<Record<string, number>>): string {
  return Object.entries(statuses)
    .map(([status, count]) => `${count.toLocaleString('en-US')} × ${status === '0' ? 'no answer' : status}`)
    .join(', ');
}

/** The section of bench/RESULTS.md, between markers so that `--only starvation` can replace it alone. */
export function starvationSection(result: StarvationResult, header: readonly string[], seconds: number): string[] {
  const ms = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
  const row = (name: string, s: LatencySummary): string =>
    `| ${name} | ${s.count.toLocaleString('en-US')} | ${ms(s.p50Ms)} | ${ms(s.p99Ms)} | ${ms(s.maxMs)} | ${statusText(s.statuses)} |`;
  return [
    starvationBegin,
    '## Starvation: ordinary reviews while ten large ones are in flight',
    '',
    ...header,
    '',
    `One server on both cores (5,000 nodes, 10,000 namespaces, the shipped policies). Ten connections each keep one large review in flight for ${seconds} s (validating side, in turn: ${largeShapes.join('; ')}; bodies of ${result.largeBodyMib.map((n) => n.toFixed(1)).join(', ')} MiB); one more sends the ordinary reviews of the mix one at a time, 50 ms apart. The floor: the same ordinary reviews with nothing else in flight, just before. Time from the client, request written to the answer's last byte. Target: every ordinary review answered within ${starvationTargetMs.toLocaleString('en-US')} ms.`,
    '',
    '| reviews | answered | p50 ms | p99 ms | max ms | statuses |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
    row('ordinary, alone (floor)', result.idle),
    row('ordinary, ten large in flight', result.loaded),
    row('the large ones', result.large),
    '',
    `Server CPU while loaded: ${result.serverCores.toFixed(2)} cores (CPU seconds of all its threads per second). RSS: ${result.idleRssMib.toFixed(0)} MiB idle, peak ${result.peakRssMib.toFixed(0)} MiB while loaded.`,
    '',
    starvationEnd,
  ];
}

/** `text` with its starvation section replaced by `section` (or put before the targets, or at the end). */
export function spliceStarvationSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(starvationBegin);
  const end = text.indexOf(starvationEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + starvationEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
