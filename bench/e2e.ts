/**
 * `npm run bench -- --only e2e`: what tolerator's webhooks add to a pod creation through a real
 * kube-apiserver (v1.35, built by `npm run control-plane:build`), measured as Kyverno measures
 * its admission cost: creates per second and p50/p99 latency at 1 and 16 concurrent clients,
 * with `?dryRun=All` so that etcd's writes are not what is measured (admission, defaulting and
 * validation all run; nothing is stored).
 *
 * "without" is the same API server, the same moment and the same pod, in a namespace labelled
 * `tolerator.dev/ignore=true`: the shipped namespaceSelector excludes it, so the API server
 * evaluates the selector and calls no webhook. "with" is an ordinary namespace, where both
 * webhooks are called. Rounds alternate the order, so drift on a shared machine falls on both.
 * The client is cluster-admin (system:masters), which API Priority and Fairness exempts from
 * queuing: the latency is admission's, not a flow-control queue's.
 *
 * "policies" is the same pod through `tolerator export`'s MutatingAdmissionPolicy and
 * ValidatingAdmissionPolicy (docs/without-a-webhook.md) instead of the webhooks: a namespace the
 * webhooks skip (`tolerator.dev/ignore=true`), selected by the policies' bindings alone (their
 * namespaceSelector is replaced by a label only that namespace carries). On 1.35 the API server
 * runs with the MutatingAdmissionPolicy gate and runtime-config for it; the other two rows are
 * unaffected by a policy whose binding selects another namespace.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { parse } from 'yaml';
import {
  controlPlaneMinor,
  defaultExportSettings,
  exportedDocuments,
  installExportedPolicies,
  mutatingPolicyPlaneOptions,
} from '../test/cluster/exported-policies.js';
import { createObject, startToleratorOnCluster, type Manifest } from '../test/cluster/tolerator-on-cluster.js';

export const e2eBegin = '<!-- e2e: written by `npm run bench -- --only e2e` -->';
export const e2eEnd = '<!-- /e2e -->';

interface KubeconfigUser {
  'client-certificate-data': string;
  'client-key-data': string;
}

function credentials(kubeconfig: string): { server: URL; ca: string; cert: string; key: string } {
  const config = parse(readFileSync(kubeconfig, 'utf8')) as {
    clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { user: KubeconfigUser }[];
  };
  const cluster = config.clusters[0]?.cluster;
  const user = config.users[0]?.user;
  if (cluster === undefined || user === undefined) throw new Error(`${kubeconfig}: no cluster or no user`);
  const b64 = (text: string): string => Buffer.from(text, 'base64').toString('utf8');
  return {
    server: new URL(cluster.server),
    ca: b64(cluster['certificate-authority-data']),
    cert: b64(user['client-certificate-data']),
    key: b64(user['client-key-data']),
  };
}

/** A Burstable pod: both webhooks review it and the mutating one adds memory-pressure. */
function podBody(namespace: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'bench', namespace, labels: { app: 'bench' } },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '100m', memory: '64Mi' } } }] },
  });
}

interface Run {
  readonly creates: number;
  readonly seconds: number;
  readonly latenciesMs: readonly number[];
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** `clients` loops, each creating the pod (dry run) one request after another for `seconds`. */
async function measure(target: ReturnType<typeof credentials>, namespace: string, clients: number, seconds: number): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients, ca: target.ca, cert: target.cert, key: target.key });
  const body = podBody(namespace);
  const path = `/api/v1/namespaces/${namespace}/pods?dryRun=All`;
  const latencies: number[] = [];
  const started = performance.now();
  const until = started + seconds * 1000;
  const one = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: target.server.hostname,
          port: target.server.port,
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            if (res.statusCode === 201) resolve(res.statusCode);
            else reject(new Error(`create answered ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`));
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const begin = performance.now();
        await one();
        latencies.push(performance.now() - begin);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  return { creates: latencies.length, seconds: elapsed, latenciesMs: latencies };
}

export interface E2eOptions {
  readonly dir: string;
  readonly quick: boolean;
  readonly note: (text: string) => void;
}

/** The section's lines: title, method, table of rates and latencies, the added latency. */
export async function measureE2e(options: E2eOptions): Promise<string[]> {
  const rounds = options.quick ? 1 : 3;
  const seconds = options.quick ? 2 : 5;
  options.note('starting a control plane with tolerator registered');
  // Log level info, as deploy/ runs it: one line a review.
  const version = controlPlaneMinor();
  const cluster = await startToleratorOnCluster({ dir: join(options.dir, 'e2e'), plane: mutatingPolicyPlaneOptions(version) });
  try {
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'bench-policies', labels: { 'tolerator.dev/ignore': 'true', 'tolerator.dev/bench': 'policies' } },
    });
    const onlyBenchPolicies = { matchLabels: { 'tolerator.dev/bench': 'policies' } };
    const documents = exportedDocuments(defaultExportSettings(version)).map((document): Manifest => {
      if (!document.kind.endsWith('Binding')) return document;
      const spec = document.spec as Record<string, unknown>;
      return { ...document, spec: { ...spec, matchResources: { namespaceSelector: onlyBenchPolicies } } };
    });
    await installExportedPolicies(cluster.plane.kubeconfig, documents, 'bench-policies');
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-with' } });
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'bench-without', labels: { 'tolerator.dev/ignore': 'true' } },
    });
    const target = credentials(cluster.plane.kubeconfig);
    // Warm-up: connections, the API server's caches, V8's compiled code on both sides.
    await measure(target, 'bench-with', 4, 2);
    await measure(target, 'bench-without', 4, 2);
    await measure(target, 'bench-policies', 4, 2);
    const results = new Map<string, Run[]>();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ['bench-without', 'bench-with', 'bench-policies'] : ['bench-policies', 'bench-with', 'bench-without'];
      for (const clients of [1, 16]) {
        for (const namespace of order) {
          options.note(`round ${round + 1}: ${namespace}, ${clients} clients`);
          const key = `${namespace}@${clients}`;
          results.set(key, [...(results.get(key) ?? []), await measure(target, namespace, clients, seconds)]);
        }
      }
    }
    const summary = (namespace: string, clients: number): { rate: number; p50: number; p99: number } => {
      const runs = results.get(`${namespace}@${clients}`) ?? [];
      const all = runs.flatMap((run) => run.latenciesMs).sort((a, b) => a - b);
      const rate = runs.reduce((sum, run) => sum + run.creates, 0) / runs.reduce((sum, run) => sum + run.seconds, 0);
      return { rate, p50: percentile(all, 50), p99: percentile(all, 99) };
    };
    const lines = [
      e2eBegin,
      '## Pod creation through kube-apiserver, with and without tolerator, and with its exported policies instead (`--only e2e`)',
      '',
      `- kube-apiserver ${cluster.plane.version} and etcd from \`npm run control-plane:build\` on loopback; tolerator \`serve\` from the sources at the shipped log level (info: a line a review); the shipped webhooks (\`kubectl kustomize deploy/\`, clientConfig → url + caBundle)`,
      `- a Burstable pod, \`POST …/pods?dryRun=All\`; ${rounds} round(s) of ${seconds} s per cell, order alternated; "without": a namespace labelled \`tolerator.dev/ignore=true\` (no webhook called); "exported policies": such a namespace selected by \`tolerator export\`'s policy bindings alone (docs/without-a-webhook.md); client cluster-admin (APF-exempt)`,
      "- the API server, etcd, tolerator and the client share the machine's 2 cores: absolute rates are this machine's, the difference is what the webhooks add",
      '',
      '| namespace | clients | creates/s | p50 ms | p99 ms |',
      '| --- | ---: | ---: | ---: | ---: |',
    ];
    for (const clients of [1, 16]) {
      for (const namespace of ['bench-without', 'bench-with', 'bench-policies']) {
        const s = summary(namespace, clients);
        const title = { 'bench-with': 'with tolerator', 'bench-without': 'without', 'bench-policies': 'exported policies' }[namespace];
        lines.push(`| ${title} | ${clients} | ${Math.round(s.rate).toLocaleString('en-US')} | ${s.p50.toFixed(2)} | ${s.p99.toFixed(2)} |`);
      }
    }
    lines.push('');
    for (const clients of [1, 16]) {
      const withIt = summary('bench-with', clients);
      const without = summary('bench-without', clients);
      const policies = summary('bench-policies', clients);
      lines.push(
        `- added by tolerator at ${clients} client(s): p50 +${(withIt.p50 - without.p50).toFixed(2)} ms, p99 +${(withIt.p99 - without.p99).toFixed(2)} ms, throughput ×${(withIt.rate / without.rate).toFixed(2)}`,
        `- added by the exported policies at ${clients} client(s): p50 +${(policies.p50 - without.p50).toFixed(2)} ms, p99 +${(policies.p99 - without.p99).toFixed(2)} ms, throughput ×${(policies.rate / without.rate).toFixed(2)}`,
      );
    }
    lines.push(e2eEnd);
    return lines;
  } finally {
    await cluster.stop();
  }
}

/** RESULTS.md with the e2e section replaced, or inserted before the targets. */
export function spliceE2eSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(e2eBegin);
  const end = text.indexOf(e2eEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + e2eEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
