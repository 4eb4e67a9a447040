/**
 * The scale section of bench/RESULTS.md (`npm run bench -- --only scale`, and part of the full
 * run): `tolerator serve --kubeconfig` against a fake API server (test/support/fake-api-server.ts, in
 * this process) holding a cluster whose Nodes and Namespaces look like real ones
 * (test/support/realistic-objects.ts: a Node about 19 KB of JSON, status.images with 50 entries,
 * managedFields, conditions, addresses; a Namespace about 0.6 KB), at three sizes: the mix's own
 * 10 namespaces and 5 nodes (the floor: what the process costs with next to nothing cached), 500
 * nodes and 1,000 namespaces, and 5,000 nodes (Kubernetes' supported maximum) and 10,000
 * namespaces.
 *
 * For each, a fresh server: RSS (VmRSS) when /readyz first answers 200 (both caches synced), then
 * load — the mix at 16 connections while every node's kubelet posts a status update (a MODIFIED
 * event of the whole Node through the watch, spread over the load) — and RSS after it, and the
 * peak (VmHWM) over the server's whole life, the initial list included: what a memory limit
 * counts. The target is RSS at start with 5,000 nodes and 10,000 namespaces under 160 MiB (what
 * the issue measured: 637 MiB); the peak under load is reported beside the floor's, since the
 * load alone (V8's young generation grown by reviews) takes the floor itself past that.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeApiServer, type KubeObject } from '../test/support/fake-api-server.js';
import { heartbeatNode, storedNamespace, storedNode } from '../test/support/realistic-objects.js';
import type { LoadGenerator } from './load-client.js';
import { clusterObjects, type Payload } from './payloads.js';
import { createMemoryCgroup, deploymentMemoryLimitBytes, type MemoryCgroup } from './memory-cgroup.js';
import { checkAnswer, peakResidentBytes, residentBytes, startServer, type Certificate } from './servers.js';

export const scaleBegin = '<!-- scale: written by `npm run bench -- --only scale` -->';
export const scaleEnd = '<!-- /scale -->';

/** The target: a third of the Deployment's 512 Mi limit, leaving the rest to reviews in flight and the audit. */
export const scaleTargetMib = 160;

/**
 * Each size runs in a memory cgroup of the Deployment's limit (bench/memory-cgroup.ts: Node.js
 * sizes V8's heap, young generation included, from that limit, so this is the RSS a replica has),
 * and the largest again with the machine's memory and then with V8's semi-space capped at 8 MiB:
 * what the same process costs where nothing limits it, and by how much the young generation
 * (grown to 16 MiB a semi-space by the list's allocations there) accounts for the difference.
 */
const sizes: readonly { nodes: number; namespaces: number; confined: boolean; nodeFlags?: readonly string[] }[] = [
  { nodes: 5, namespaces: 10, confined: true },
  { nodes: 500, namespaces: 1_000, confined: true },
  { nodes: 5_000, namespaces: 10_000, confined: true },
  { nodes: 5, namespaces: 10, confined: false },
  { nodes: 5_000, namespaces: 10_000, confined: false },
  { nodes: 5_000, namespaces: 10_000, confined: false, nodeFlags: ['--max-semi-space-size=8'] },
];

export interface ScaleRow {
  readonly nodes: number;
  readonly namespaces: number;
  readonly nodeFlags: readonly string[];
  /** The memory cgroup the server ran in (`cgroup v1 memory.limit_in_bytes 512 MiB`), or why none. */
  readonly memory: string;
  readonly confined: boolean;
  /** The JSON of every Node and every Namespace, as one unpaged list of each would send it. */
  readonly listMib: number;
  readonly startupSeconds: number;
  readonly rssAtStartMib: number;
  /** VmHWM when /readyz first answers 200: the peak of the start itself (the lists, the workers starting), what the target counts. */
  readonly peakAtStartMib: number;
  readonly rssAfterLoadMib: number;
  readonly peakMib: number;
  readonly requests: number;
  readonly nodeUpdates: number;
}

export interface ScaleContext {
  readonly root: string;
  readonly dir: string;
  readonly certificate: Certificate;
  readonly load: LoadGenerator;
  readonly mix: readonly Payload[];
  readonly seconds: number;
  readonly note: (text: string) => void;
}

/** A fresh cgroup per server (its peak, memory.max_usage_in_bytes, is the server's alone), removed after. */
function cgroupFor(context: ScaleContext, size: (typeof sizes)[number], index: number): MemoryCgroup | { reason: string } {
  if (!size.confined) return { reason: "the machine's memory" };
  return createMemoryCgroup(`tolerator-bench-${process.pid}-${index}`, deploymentMemoryLimitBytes(context.root));
}

const mib = (bytes: number): number => bytes / 1024 / 1024;

async function measureSize(context: ScaleContext, size: (typeof sizes)[number], index: number): Promise<ScaleRow> {
  const { namespaces, nodes } = clusterObjects(size.namespaces, size.nodes);
  const storedNodes = nodes.map((node, i) => storedNode(node as KubeObject, i));
  const fake = await FakeApiServer.start();
  try {
    namespaces.forEach((namespace, i) => {
      fake.put('namespaces', storedNamespace(namespace as KubeObject, i));
    });
    for (const node of storedNodes) fake.put('nodes', node);
    const listBytes =
      storedNodes.reduce((sum, node) => sum + Buffer.byteLength(JSON.stringify(node)), 0) +
      namespaces.reduce<number>(
        (sum, namespace, i) => sum + Buffer.byteLength(JSON.stringify(storedNamespace(namespace as KubeObject, i))),
        0,
      );
    const kubeconfig = join(context.dir, `kubeconfig-scale-${index}.json`);
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: fake.url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'anonymous', user: {} }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'anonymous' } }],
        'current-context': 'fake',
      }),
    );
    context.note(
      `scale: ${size.nodes} nodes, ${size.namespaces} namespaces (${mib(listBytes).toFixed(0)} MiB of JSON)${size.nodeFlags === undefined ? '' : `, node ${size.nodeFlags.join(' ')}`}`,
    );
    const cgroup = cgroupFor(context, size, index);
    const memoryCgroup = 'procsFile' in cgroup ? cgroup : undefined;
    const memory = 'procsFile' in cgroup ? cgroup.description : size.confined ? `no cgroup (${cgroup.reason})` : cgroup.reason;
    context.note(`scale: memory: ${memory}`);
    const server = await startServer(
      {
        label: `${size.nodes} nodes, ${size.namespaces} namespaces`,
        kind: 'tolerator',
        logLevel: 'warn',
        policiesDir: join(context.root, 'policies'),
        kubeconfig,
        nodeFlags: size.nodeFlags ?? [],
        ...(memoryCgroup === undefined ? {} : { memoryCgroup }),
      },
      context.certificate,
    ).catch((error: unknown) => {
      memoryCgroup?.remove();
      throw error;
    });
    try {
      const rssAtStart = residentBytes(server.pid);
      const peakAtStart = peakResidentBytes(server.pid);
      for (const payload of context.mix) await checkAnswer(server, payload, context.certificate);
      // Every node's status update once during the load, in 20 batches (500 ms apart over 10 s for 5,000 nodes).
      let updates = 0;
      const heartbeats = (async () => {
        const batches = 20;
        const per = Math.ceil(storedNodes.length / batches);
        for (let batch = 0; batch < batches; batch++) {
          for (const node of storedNodes.slice(batch * per, (batch + 1) * per)) {
            fake.put('nodes', heartbeatNode(node, '2026-11-30T12:05:00Z'));
            updates += 1;
          }
          await sleep((context.seconds * 1000) / batches);
        }
      })();
      const measured = await context.load.measure(server.pid, {
        url: server.url,
        connections: 16,
        seconds: context.seconds,
        warmupSeconds: 1,
        requests: context.mix.map(({ path, body }) => ({ path, body })),
      });
      await heartbeats;
      // The watch events still on their way are delivered before the after-load sample.
      await sleep(1_000);
      return {
        nodes: size.nodes,
        namespaces: size.namespaces,
        nodeFlags: size.nodeFlags ?? [],
        memory,
        confined: memoryCgroup !== undefined,
        listMib: mib(listBytes),
        startupSeconds: server.startupMs / 1000,
        rssAtStartMib: mib(rssAtStart),
        peakAtStartMib: mib(peakAtStart),
        rssAfterLoadMib: mib(residentBytes(server.pid)),
        peakMib: mib(peakResidentBytes(server.pid)),
        requests: measured.requests,
        nodeUpdates: updates,
      };
    } finally {
      await server.stop();
      memoryCgroup?.remove();
    }
  } finally {
    await fake.close();
  }
}

/**
 * The row the target is read from: the largest cluster as a replica runs it — in the Deployment's
 * memory limit where the bench could make the cgroup, Node.js's own settings.
 */
export function targetRow(rows: readonly ScaleRow[]): ScaleRow | undefined {
  const asDeployed = rows.filter((row) => row.nodeFlags.length === 0 && row.confined);
  return (asDeployed.length > 0 ? asDeployed : rows.filter((row) => row.nodeFlags.length === 0)).at(-1);
}

/** The floor of a row: the smallest cluster measured with the same memory. */
function floorOf(rows: readonly ScaleRow[], row: ScaleRow): ScaleRow | undefined {
  return rows.find((candidate) => candidate.confined === row.confined && candidate.nodeFlags.length === 0);
}

/** The rows of the section, smallest cluster (the floor) first. */
export async function measureScale(context: ScaleContext): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  for (const [index, size] of sizes.entries()) rows.push(await measureSize(context, size, index));
  return rows;
}

/** The section's lines, between its markers; `header` (date, machine) goes after the title. */
export function scaleSection(rows: readonly ScaleRow[], header: readonly string[]): string[] {
  const largest = targetRow(rows);
  const floor = largest === undefined ? rows[0] : floorOf(rows, largest);
  const format = (n: number): string => n.toFixed(1);
  return [
    scaleBegin,
    '## Memory against the size of the cluster',
    '',
    ...header,
    '',
    `\`tolerator serve --kubeconfig\` (informers, the shipped policies, log warn) against a fake API server in the bench process whose Nodes and Namespaces look like a cloud cluster's (test/support/realistic-objects.ts: a Node ≈ 19 KB of JSON with 50 \`status.images\`, managedFields, conditions and addresses; a Namespace ≈ 0.6 KB). RSS (VmRSS) when /readyz first answers 200 (both caches synced), and the peak until then (VmHWM at that moment: the start itself, the paged lists and the review workers starting); then the mix at 16 connections while every Node gets one kubelet status update through the watch, and RSS after it; the peak is VmHWM over the server's whole life, the initial lists included — what the container's memory limit counts. Each group's first row is its floor: the same server with only the mix's 10 namespaces and 5 nodes. "memory": the rows marked with the Deployment's limit ran in a memory cgroup of that size (deploy/base/deployment.yaml), as a replica does — Node.js sizes V8's heap and its young generation from the limit (a 259 MiB heap limit and 2 MiB of new space in 512 MiB, against 4 GiB and up to 32 MiB with this machine's 24 GiB), so only those rows are the RSS a replica has; the others show the same process where nothing limits it. Other work shares both cores: startup times are noisy, RSS much less so.`,
    '',
    '| nodes | namespaces | memory | node flags | list JSON MiB | start to ready s | RSS at start MiB | peak during start MiB | RSS after load MiB | peak RSS MiB | peak above floor MiB | reviews | node updates |',
    '| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (row) =>
        `| ${row.nodes.toLocaleString('en-US')} | ${row.namespaces.toLocaleString('en-US')} | ${row.memory} | ${row.nodeFlags.length === 0 ? '' : `\`${row.nodeFlags.join(' ')}\``} | ${format(row.listMib)} | ${row.startupSeconds.toFixed(2)} | ${format(row.rssAtStartMib)} | ${format(row.peakAtStartMib)} | ${format(row.rssAfterLoadMib)} | ${format(row.peakMib)} | ${format(row.peakMib - (floorOf(rows, row)?.peakMib ?? 0))} | ${row.requests.toLocaleString('en-US')} | ${row.nodeUpdates.toLocaleString('en-US')} |`,
    ),
    '',
    largest === undefined
      ? ''
      : `Target: peak RSS under ${scaleTargetMib} MiB with ${largest.nodes.toLocaleString('en-US')} nodes and ${largest.namespaces.toLocaleString('en-US')} namespaces, start included (${largest.confined ? "in the Deployment's memory limit" : "**outside the Deployment's memory limit: the bench could not make a cgroup**"}, Node.js's own settings): ${format(largest.peakAtStartMib)} MiB during start (${largest.peakAtStartMib < scaleTargetMib ? 'met' : '**not met**'}), ${format(largest.rssAtStartMib)} MiB once ready; its peak, load included, ${format(largest.peakMib)} MiB against the floor's ${format(floor?.peakMib ?? 0)} MiB.`,
    '',
    scaleEnd,
  ];
}

/** `text` with its scale section replaced by `section` (or put before the targets, or at the end). */
export function spliceScaleSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(scaleBegin);
  const end = text.indexOf(scaleEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + scaleEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
