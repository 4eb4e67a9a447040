/**
 * What one review worker costs, for the sizing rule of src/http/transport-limits.ts
 * (`reviewWorkerCount`): the resident memory a worker adds to the process idle, and its peak above
 * that while it answers one review, for the largest review the body limit admits and for the
 * shapes that build the most heap from their bytes (bench/worst-reviews.ts).
 *
 *   npm run build && node --import tsx bench/worker-peak.ts [heap MiB] [shape filter]
 *
 * The built code (dist/, so that the worker runs what a replica runs, not tsx), the bench's
 * cluster (5,000 nodes, 10,000 namespaces; the worker mirrors the nodes) and the shipped policies.
 * Each shape gets a process of its own (memory a worker freed stays in the process's allocator, so
 * a second pool in one process would reuse it and hide its peak) and a pool with one worker of `heap MiB` of old generation (default 256,
 * the most src/http/transport-limits.ts gives one, so the peak is the review's and not the limit's):
 * VmRSS after a full collection before the pool starts, then once it is ready and has answered a
 * warm-up review (the worker's idle cost), then VmHWM, reset just before the review is sent, above
 * VmRSS then (the review's peak: the main thread only waits meanwhile, the body moves to the worker
 * without a copy). Prints one JSON line per shape.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeClusterState } from './payloads.js';
import { worstReviews } from './worst-reviews.js';

const [heapText = '256', filter, only] = process.argv.slice(2);
const heapMib = Number(heapText);
if (only === undefined) {
  // The driver: builds each body (its garbage stays here) and measures it in a child of its own.
  const bodies = mkdtempSync(join(tmpdir(), 'worker-peak-bodies-'));
  try {
    for (const shape of worstReviews()) {
      const name = `${shape.shape} ${shape.path}`;
      if (filter !== undefined && filter !== '' && !name.includes(filter)) continue;
      const file = join(bodies, 'body.json');
      writeFileSync(file, shape.build());
      const line = execFileSync(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', new URL(import.meta.url).pathname, heapText, file, name],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
      );
      process.stdout.write(line);
    }
  } finally {
    rmSync(bodies, { recursive: true, force: true });
  }
  process.exit(0);
}
const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error('worker-peak.ts runs each shape with node --expose-gc');

const dist = new URL('../dist/', import.meta.url);
const load = async (module: string): Promise<Record<string, unknown>> =>
  (await import(new URL(module, dist).href)) as Record<string, unknown>;
interface Pool {
  review(side: string, body: Uint8Array, deadline: number): Promise<{ payload: string }>;
  close(): Promise<void>;
}
const built = {
  ...(await load('cli/flags.js')),
  ...(await load('cli/options.js')),
  ...(await load('server/tenancy-policies.js')),
  ...(await load('kube/cluster-state-file.js')),
  ...(await load('server/review-pool.js')),
} as unknown as {
  parseFlags: (args: readonly string[], flags: unknown) => unknown;
  admissionFlags: unknown;
  readAdmissionSettings: (flags: unknown) => { gates: unknown };
  startTenancy: (dir: string, logger: unknown, metrics: undefined, watch: boolean) => { current: () => unknown };
  loadClusterStateFile: (file: string, logger: unknown) => unknown;
  startReviewPool: (options: Record<string, unknown>) => Promise<Pool>;
};

const dir = mkdtempSync(join(tmpdir(), 'worker-peak-'));
const clusterStateFile = join(dir, 'cluster.json');
writeClusterState(clusterStateFile, 10_000, 5_000);
const policiesDir = new URL('../policies', import.meta.url).pathname;
const silent = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined, child: () => silent };
const settings = built.readAdmissionSettings(
  built.parseFlags([`--cluster-state=${clusterStateFile}`, `--policies=${policiesDir}`], built.admissionFlags),
);
const facts = built.loadClusterStateFile(clusterStateFile, silent);
const tenancy = built.startTenancy(policiesDir, silent, undefined, false);
const warmup = Buffer.from(
  JSON.stringify(
    (JSON.parse(readFileSync(new URL('../test/fixtures/reviews/tenant-pod-create.json', import.meta.url), 'utf8')) as { review: unknown })
      .review,
  ),
);

const mib = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
function statusBytes(field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

try {
  for (const shape of worstReviews()) {
    const name = `${shape.shape} ${shape.path}`;
    if (name !== only) continue;
    const body = readFileSync(filter ?? '');
    const bodyBytes = body.length;
    collect();
    const before = statusBytes('VmRSS');
    const pool = await built.startReviewPool({
      workers: 1,
      heapMib,
      settings,
      clusterFacts: facts,
      policies: tenancy.current,
      gates: () => settings.gates,
      logger: silent,
      now: () => performance.now(),
    });
    try {
      await pool.review('mutate', new Uint8Array(warmup), performance.now() + 60_000);
      collect();
      const idle = statusBytes('VmRSS');
      writeFileSync('/proc/self/clear_refs', '5');
      const started = performance.now();
      let outcome: string;
      try {
        const answer = await pool.review(shape.path === '/mutate' ? 'mutate' : 'validate', body, performance.now() + 60_000);
        outcome = `answered, ${answer.payload.length} B`;
      } catch (error) {
        outcome = `undecided: ${error instanceof Error ? error.message : String(error)}`;
      }
      const ms = performance.now() - started;
      const peak = statusBytes('VmHWM');
      process.stdout.write(
        `${JSON.stringify({
          shape: name,
          bodyMib: mib(bodyBytes),
          heapMib,
          workerIdleMib: mib(idle - before),
          peakAboveIdleMib: mib(peak - idle),
          ms: Math.round(ms),
          outcome,
        })}\n`,
      );
    } finally {
      await pool.close();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
