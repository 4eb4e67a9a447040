/**
 * Tenant fairness (part of `npm run bench -- --only worst`): how long another team's ordinary but
 * large pod (120 KB, so decided by a review worker, src/server/review-pool.ts) waits while one
 * tenant keeps N dry-run pods of 3 MiB in flight (issue 28: with six in flight, the other team's
 * pod was answered `500 after 5.3 s, 500 after 5.4 s, 200 after 3.8 s`; with four, none of three
 * within the webhook's timeout, and the validating webhook fails closed).
 *
 * One server per build on both cores (5,000 nodes, 10,000 namespaces, the shipped policies), in a
 * memory cgroup of the Deployment's limit where the bench can make one (bench/memory-cgroup.ts),
 * so that the server derives its review workers as a replica does (two in 512 MiB on two CPUs);
 * this build is also measured with `--review-workers 1`, what 512 MiB gave before. Peak RSS: the
 * server's VmHWM over its whole life, start included, read before it stops. N connections each keep
 * one of the tenant's 3 MiB pods in flight (validating side, `ml`, `dryRun: true`; the next is
 * sent when the answer arrives); one more sends the other team's 120 KB pod (`shop`) one at a
 * time, 200 ms apart. Every request carries `?timeout=5s`, as kube-apiserver sends the deploy/
 * webhooks' timeoutSeconds: past it the server answers 500. With `--baseline DIR` the build there
 * is measured the same way in the same run, so the two compare at the same load.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { createMemoryCgroup, deploymentMemoryLimitBytes } from './memory-cgroup.js';
import { checkAnswer, startServer, type Certificate } from './servers.js';
import type { Payload } from './payloads.js';
import { worstReviews } from './worst-reviews.js';

export interface FairnessContext {
  readonly certificate: Certificate;
  readonly clusterStateFile: string;
  readonly policiesDir: string;
  readonly warmup: readonly Payload[];
  /** The builds to measure: this checkout's dist/ (no main) and, with --baseline, another; `serveArgs` for `--review-workers`. */
  readonly builds: readonly { readonly label: string; readonly main?: string; readonly serveArgs?: readonly string[] }[];
  /** The repository's root, for the Deployment's memory limit. */
  readonly root: string;
  readonly seconds: number;
  readonly note: (text: string) => void;
}

export interface FairnessRow {
  readonly build: string;
  readonly inFlight: number;
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** The server's peak RSS (VmHWM) over its life, read after its last measurement: the same for a build's rows. */
  peakRssMib: number;
  /** Where it ran: the cgroup's description, or why there was none. */
  readonly memory: string;
  /** Answers by status (0: none, the connection failed). */
  readonly statuses: Readonly<Record<string, number>>;
  /** The tenant's own large reviews answered in the same time, by status. */
  readonly largeStatuses: Readonly<Record<string, number>>;
}

/** The tenant's pods in flight: none (the floor), the four and six. */
const inFlightCounts = [0, 4, 6] as const;
const smallPauseMs = 200;
/** kube-apiserver's `?timeout=` for the deploy/ webhooks' timeoutSeconds: 5. */
const timeoutQuery = '?timeout=5s';

type Json = Record<string, unknown>;

/** The tenant's 3 MiB pod (bench/worst-reviews.ts) as a dry run, and another team's pod of the same shape cut to 120 KB. */
function bodies(): { large: Buffer; small: Buffer } {
  const shape = worstReviews().find((review) => review.shape === 'containers with resources' && review.path === '/validate');
  if (shape === undefined) throw new Error('bench/worst-reviews.ts has no containers shape on /validate');
  const review = JSON.parse(shape.build()) as { request: Json & { object: { metadata: Json; spec: { containers: unknown[] } } } };
  review.request.dryRun = true;
  const large = Buffer.from(JSON.stringify(review));
  const other = structuredClone(review);
  other.request.namespace = 'shop';
  other.request.object.metadata.namespace = 'shop';
  other.request.dryRun = false;
  const containers = other.request.object.spec.containers;
  // 120 KB: as many containers as keep the body at or under it.
  let count = containers.length;
  const size = (): number => Buffer.byteLength(JSON.stringify(other));
  other.request.object.spec.containers = containers.slice(0, count);
  while (size() > 120_000 && count > 1) {
    count = Math.floor(count * 0.9);
    other.request.object.spec.containers = containers.slice(0, count);
  }
  return { large, small: Buffer.from(JSON.stringify(other)) };
}

export async function measureTenantFairness(context: FairnessContext): Promise<FairnessRow[]> {
  const { large, small } = bodies();
  context.note(
    `fairness: the tenant's pod ${(large.length / 1024 / 1024).toFixed(2)} MiB, the other team's ${(small.length / 1000).toFixed(0)} KB`,
  );
  const rows: FairnessRow[] = [];
  for (const [index, build] of context.builds.entries()) {
    const cgroup = createMemoryCgroup(`tolerator-fairness-${process.pid}-${index}`, deploymentMemoryLimitBytes(context.root));
    const memoryCgroup = 'procsFile' in cgroup ? cgroup : undefined;
    const memory = memoryCgroup?.description ?? `the machine's (no cgroup: ${'reason' in cgroup ? cgroup.reason : ''})`;
    const server = await startServer(
      {
        label: `fairness: ${build.label}`,
        kind: 'tolerator',
        logLevel: 'warn',
        policiesDir: context.policiesDir,
        clusterStateFile: context.clusterStateFile,
        cores: 'all',
        ...(build.serveArgs === undefined ? {} : { serveArgs: build.serveArgs }),
        ...(build.main === undefined ? {} : { main: build.main }),
        ...(memoryCgroup === undefined ? {} : { memoryCgroup }),
      },
      context.certificate,
    );
    const buildRows: FairnessRow[] = [];
    try {
      for (const payload of context.warmup) await checkAnswer(server, payload, context.certificate);
      for (const inFlight of inFlightCounts) {
        context.note(`fairness: ${build.label}, ${inFlight} of the tenant's pods in flight, ${context.seconds} s`);
        const smallAgent = new Agent({ keepAlive: true, maxSockets: 1, ca: context.certificate.ca });
        const largeAgent = new Agent({ keepAlive: true, maxSockets: Math.max(1, inFlight), ca: context.certificate.ca });
        try {
          const stop = { at: Number.POSITIVE_INFINITY };
          const largeTimes: Timed[] = [];
          const senders = Array.from({ length: inFlight }, async () => {
            while (performance.now() < stop.at) largeTimes.push(await post(server.port, largeAgent, large));
          });
          if (inFlight > 0) await sleep(1_000);
          const times: Timed[] = [];
          const end = performance.now() + context.seconds * 1000;
          while (performance.now() < end) {
            times.push(await post(server.port, smallAgent, small));
            await sleep(smallPauseMs);
          }
          stop.at = performance.now();
          await Promise.all(senders);
          const sorted = times.map((t) => t.ms).sort((a, b) => a - b);
          buildRows.push({
            build: build.label,
            inFlight,
            count: times.length,
            p50Ms: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN,
            p99Ms: sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? Number.NaN,
            maxMs: sorted.at(-1) ?? Number.NaN,
            peakRssMib: Number.NaN,
            memory,
            statuses: countStatuses(times),
            largeStatuses: countStatuses(largeTimes),
          });
        } finally {
          smallAgent.destroy();
          largeAgent.destroy();
        }
      }
      const peak = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1];
      for (const row of buildRows) row.peakRssMib = Number(peak ?? Number.NaN) / 1024;
      rows.push(...buildRows);
    } finally {
      await server.stop();
      memoryCgroup?.remove();
    }
  }
  return rows;
}

interface Timed {
  readonly ms: number;
  readonly status: number;
}

function countStatuses(times: readonly Timed[]): Record<string, number> {
  const statuses: Record<string, number> = {};
  for (const t of times) statuses[String(t.status)] = (statuses[String(t.status)] ?? 0) + 1;
  return statuses;
}

function post(port: number, agent: Agent, body: Buffer): Promise<Timed> {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path: `/validate${timeoutQuery}`,
        method: 'POST',
        agent,
        servername: 'localhost',
        timeout: 60_000,
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

function statusText(statuses: Readonly<Record<string, number>>): string {
  return Object.entries(statuses)
    .map(([status, count]) => `${count.toLocaleString('en-US')} × ${status === '0' ? 'no answer' : status}`)
    .join(', ');
}

/** The lines the worst-review section carries about fairness. */
export function fairnessLines(rows: readonly FairnessRow[], seconds: number): string[] {
  const ms = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
  return [
    "### Another team's pod while one tenant keeps 3 MiB dry runs in flight",
    '',
    `One server per build on both cores (5,000 nodes, 10,000 namespaces, the shipped policies; memory: ${rows[0]?.memory ?? ''}), with the review workers it derives from that (two in 512 MiB on two CPUs) or with \`--review-workers 1\`. N connections each keep one of the tenant's 3 MiB dry-run pods in flight (validating side, \`ml\`); one more sends another team's 120 KB pod (\`shop\`: a review worker's, being over 64 KiB) one at a time, ${smallPauseMs} ms apart, for ${seconds} s. Every request carries \`?timeout=5s\`, as kube-apiserver sends the deploy/ webhooks' timeoutSeconds. Time from the client.`,
    '',
    '| build | tenant pods in flight | other team answered | p50 ms | p99 ms | max ms | other team statuses | tenant statuses | server peak RSS MiB |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |',
    ...rows.map(
      (row) =>
        `| ${row.build} | ${row.inFlight} | ${row.count} | ${ms(row.p50Ms)} | ${ms(row.p99Ms)} | ${ms(row.maxMs)} | ${statusText(row.statuses)} | ${statusText(row.largeStatuses)} | ${row.peakRssMib.toFixed(1)} |`,
    ),
    '',
  ];
}
