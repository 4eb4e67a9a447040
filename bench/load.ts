/**
 * The load generator: a long-lived child process (pinned by bench/run.ts to the core the servers
 * do not use) that runs autocannon jobs read as JSON lines from standard input and answers each
 * with JSON lines on standard output: `{type:"measuring"}` when the measured part starts (after
 * the warm-up), then `{type:"result", ...}`.
 *
 * Latencies are collected from autocannon's `response` events, in fractional milliseconds:
 * autocannon's own histogram records whole milliseconds, too coarse for sub-millisecond reviews.
 */
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import type { LoadJob, LoadResult } from './protocol.js';

/** At most this many latencies are kept per job (≈ 40 MB); beyond it only the count grows. */
const maxSamples = 5_000_000;

function send(message: unknown): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function options(job: LoadJob, seconds: number): autocannon.Options {
  return {
    url: job.url,
    connections: job.connections,
    duration: seconds,
    timeout: 30,
    // At a fixed rate autocannon "corrects" its histogram by adding synthetic samples at 1/rate
    // intervals below each response time (HDR's expected-interval correction); at a per-connection
    // rate of hundreds per second that means made-up 1 ms values. The bench keeps its own samples,
    // the measured response times only, and switches the correction off.
    ...(job.overallRate === undefined ? {} : { overallRate: job.overallRate, ignoreCoordinatedOmission: true }),
    tlsOptions: { rejectUnauthorized: false },
    requests: job.requests.map((request) => ({
      method: 'POST',
      path: request.path,
      headers: { 'content-type': 'application/json' },
      body: request.body,
    })),
  };
}

function runOnce(
  job: LoadJob,
  seconds: number,
  latencies: Float64Array | undefined,
): Promise<{ count: number; wallMs: number; result: autocannon.Result }> {
  return new Promise((resolve, reject) => {
    let count = 0;
    const started = performance.now();
    const instance = autocannon(options(job, seconds), (error, result) => {
      if (error !== null) {
        reject(error);
        return;
      }
      resolve({ count, wallMs: performance.now() - started, result });
    });
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (latencies !== undefined && count < maxSamples && statusCode === 200) {
        latencies[count] = responseTime;
      }
      count++;
    });
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

async function run(job: LoadJob): Promise<LoadResult> {
  if (job.warmupSeconds > 0) {
    await runOnce(job, job.warmupSeconds, undefined);
  }
  send({ type: 'measuring', id: job.id });
  const cpuBefore = process.cpuUsage();
  const capacity = Math.min(maxSamples, Math.ceil((job.overallRate ?? 50_000) * job.seconds * 1.5) + 1000);
  const latencies = new Float64Array(capacity);
  const { count, wallMs, result } = await runOnce(job, job.seconds, latencies);
  const cpu = process.cpuUsage(cpuBefore);
  const kept = latencies.subarray(0, Math.min(count, capacity)).sort();
  let sum = 0;
  for (const value of kept) sum += value;
  return {
    type: 'result',
    id: job.id,
    requests: count,
    wallSeconds: wallMs / 1000,
    rps: count / (wallMs / 1000),
    p50: percentile(kept, 50),
    p99: percentile(kept, 99),
    mean: kept.length === 0 ? Number.NaN : sum / kept.length,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    loadCpuSeconds: (cpu.user + cpu.system) / 1e6,
  };
}

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (line) => {
  if (line.trim() === '') return;
  const job = JSON.parse(line) as LoadJob;
  queue = queue.then(async () => {
    try {
      send(await run(job));
    } catch (error) {
      send({ type: 'error', id: job.id, message: error instanceof Error ? error.message : String(error) });
    }
  });
});
lines.on('close', () => {
  void queue.then(() => process.exit(0));
});
