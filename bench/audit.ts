/**
 * The audit section of bench/RESULTS.md (`npm run bench -- --only audit`, and part of the full
 * run): `tolerator audit` of 50,000 pods across 2,000 nodes, from a `--cluster-state` file and
 * from an API server (test/support/fake-api-server.ts, in this process), each in a child process of
 * its own running the compiled command (dist/), which reports its own peak RSS
 * (`process.resourceUsage().maxRSS`) so that the bench's memory (the file's text, the fake
 * server's 50,000 pods) is not counted.
 *
 * The cluster: 500 namespaces (every fifth a tenant of its own group under the shipped label
 * policy), 2,000 nodes (half of them dedicated to those groups, tainted and labelled), 100 pods
 * per namespace, each about 2 KB of JSON as the API server stores it (labels, an owner, two
 * containers with resources, ports and env, status conditions). One pod in ten breaks a rule.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeApiServer, type KubeObject } from '../test/support/fake-api-server.js';

export const auditBegin = '<!-- audit: written by `npm run bench -- --only audit` -->';
export const auditEnd = '<!-- /audit -->';

const podCount = 50_000;
const nodeCount = 2_000;
const namespaceCount = 500;

interface Cluster {
  readonly namespaces: KubeObject[];
  readonly nodes: KubeObject[];
  readonly pods: KubeObject[];
}

function buildCluster(): Cluster {
  const namespaces = Array.from({ length: namespaceCount }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: `ns-${i}`, labels: { 'kubernetes.io/metadata.name': `ns-${i}`, ...(i % 5 === 0 ? { dedicated: `g${i}` } : {}) } },
  }));
  const groups = namespaces.filter((_, i) => i % 5 === 0).map((_, j) => `g${j * 5}`);
  const nodes = Array.from({ length: nodeCount }, (_, i) => {
    const group = i % 2 === 0 ? groups[(i / 2) % groups.length] : undefined;
    return {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: `node-${i}`,
        uid: `uid-node-${i}`,
        labels: { 'kubernetes.io/hostname': `node-${i}`, ...(group === undefined ? {} : { dedicated: group }) },
      },
      spec: group === undefined ? {} : { taints: [{ key: 'dedicated', value: group, effect: 'NoSchedule' }] },
    };
  });
  const defaults = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  ];
  const pods = Array.from({ length: podCount }, (_, i) => {
    const n = Math.floor(i / (podCount / namespaceCount));
    const group = n % 5 === 0 ? `g${n}` : undefined;
    // Tenants on a node of their group (the even nodes carry the groups in turn), others on odd nodes.
    const groupIndex = groups.indexOf(group ?? '');
    const node = group === undefined ? `node-${(i * 2 + 1) % nodeCount}` : `node-${(groupIndex * 2) % nodeCount}`;
    const broken = i % 10 === 0;
    const tolerations = broken
      ? defaults.slice(2)
      : group === undefined
        ? defaults
        : [...defaults, { key: 'dedicated', operator: 'Equal', value: group, effect: 'NoSchedule' }];
    const container = (name: string) => ({
      name,
      image: `registry.example.com/team/${name}:1.2.3`,
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
      env: [
        { name: 'LOG_LEVEL', value: 'info' },
        { name: 'POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
      ],
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
      volumeMounts: [{ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
    });
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `web-${i}-7d9f8c6b5-x${i % 97}`,
        namespace: `ns-${n}`,
        uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
        labels: { app: 'web', 'pod-template-hash': '7d9f8c6b5' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8c6b5', uid: 'rs-uid', controller: true, blockOwnerDeletion: true },
        ],
      },
      spec: {
        containers: [container('app'), container('sidecar')],
        nodeName: node,
        tolerations,
        ...(group === undefined
          ? {}
          : {
              affinity: {
                nodeAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: [group] }] }],
                  },
                },
              },
            }),
        restartPolicy: 'Always',
        serviceAccountName: 'default',
      },
      status: {
        phase: 'Running',
        qosClass: 'Burstable',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
        podIP: `10.0.${Math.floor(i / 250) % 256}.${i % 250}`,
      },
    };
  });
  return { namespaces, nodes, pods };
}

interface ChildRun {
  readonly code: number;
  readonly ms: number;
  readonly maxRssMib: number;
  readonly audited: number;
  readonly violations: number;
}

/**
 * Runs the compiled program's `audit` in a child with `args` and returns what it measured on itself:
 * wall time from before the command to its end (reading and parsing included) and peak RSS.
 * Asynchronous: when the pods come from the fake API server, this process answers the pages.
 */
function runChild(root: string, args: readonly string[]): Promise<ChildRun> {
  return new Promise<ChildRun>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', childScript(root, args)],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`audit child failed: ${stderr}`));
        else resolve(JSON.parse(stdout) as ChildRun);
      },
    );
  });
}

/** The section's lines, between its markers. */
export async function measureAudit(options: { root: string; dir: string; note: (text: string) => void }): Promise<string[]> {
  const { root, dir, note } = options;
  const cluster = buildCluster();
  const file = join(dir, 'cluster-state-audit.json');
  const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...cluster.namespaces, ...cluster.nodes, ...cluster.pods] });
  writeFileSync(file, text);
  const fileMib = Buffer.byteLength(text) / 1024 / 1024;
  const policies = join(root, 'policies');

  note(`audit: ${podCount} pods from a ${fileMib.toFixed(0)} MiB file`);
  const fromFile = await runChild(root, ['--cluster-state', file, '--policies', policies, '-o', 'json']);

  /** The cluster's first `count` pods served by a fake API server, audited through it. */
  const fromApiServer = async (count: number): Promise<ChildRun & { pages: number }> => {
    note(`audit: ${count} pods from a fake API server`);
    const fake = await FakeApiServer.start();
    try {
      for (const namespace of cluster.namespaces) fake.put('namespaces', namespace);
      for (const node of cluster.nodes) fake.put('nodes', node);
      for (const pod of cluster.pods.slice(0, count)) fake.putPod(pod);
      const kubeconfig = join(dir, 'kubeconfig-audit.json');
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
      const run = await runChild(root, ['--kubeconfig', kubeconfig, '--policies', policies, '-o', 'json']);
      return { ...run, pages: fake.podPagesServedCount };
    } finally {
      await fake.close();
    }
  };
  // A quarter of the pods too: held a page at a time, the API run's memory must not grow with them.
  const fromApiQuarter = await fromApiServer(podCount / 4);
  const fromApi = await fromApiServer(podCount);

  const row = (source: string, run: ChildRun): string =>
    `| ${source} | ${run.audited.toLocaleString('en-US')} | ${run.violations.toLocaleString('en-US')} | ${(run.ms / 1000).toFixed(1)} | ${Math.round((run.audited / run.ms) * 1000).toLocaleString('en-US')} | ${run.maxRssMib.toFixed(0)} |`;
  return [
    auditBegin,
    '## Audit of 50,000 pods',
    '',
    `\`tolerator audit -o json --policies policies\` of ${podCount.toLocaleString('en-US')} pods (about ${((fileMib * 1024) / podCount).toFixed(1)} KiB of JSON each) in ${namespaceCount} namespaces on ${nodeCount.toLocaleString('en-US')} nodes, one pod in ten breaking a rule; the compiled command in a child process of its own, which measures itself: time from the start of the command to its output (the file read and parsed, or every list request answered), and its peak RSS (\`process.resourceUsage().maxRSS\`, the whole process, Node.js's own ~45 MiB included). From the API server the command keeps its pace (pages of 500 at most 5 requests a second, client-go's defaults: at most 2,500 pods a second), so its time is that bound, not its CPU; the file run shows what the rules cost.`,
    '',
    '| source | pods audited | violations | seconds | pods/s | peak RSS MiB |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    row(`\`--cluster-state\` file (${fileMib.toFixed(0)} MiB JSON List)`, fromFile),
    row(`API server (\`--kubeconfig\`, ${fromApiQuarter.pages} pages)`, fromApiQuarter),
    row(`API server (\`--kubeconfig\`, ${fromApi.pages} pages)`, fromApi),
    '',
    `The file is read whole (its text, the parsed objects, the pods), so that run's RSS grows with the file. From the API server one page is held at a time and only the findings are kept: the RSS of a quarter of the pods and of all of them differs by ${(fromApi.maxRssMib - fromApiQuarter.maxRssMib).toFixed(0)} MiB (the findings, four times as many, and V8 collecting later in a larger heap); what they share is Node.js, the @kubernetes/client-node library (about 68 MiB once imported) and the garbage V8 lets build up between collections. \`serve --audit-interval\` lists at a slower pace (pages of 100, 5 a second: 500 pods a second, 100 s for these 50,000 pods) so that a page's parse never holds a review up for long.`,
    '',
    auditEnd,
  ];
}

function childScript(root: string, args: readonly string[]): string {
  return `
    import { readFileSync } from 'node:fs';
    const { runCli } = await import(${JSON.stringify(join(root, 'dist', 'cli', 'program.js'))});
    let output = '';
    const io = {
      stdout: (text) => { output += text; },
      stderr: (text) => { process.stderr.write(text); },
      readFile: (path) => readFileSync(path, 'utf8'),
      readBytes: (path) => readFileSync(path),
      readStdin: () => new Uint8Array(),
      log: () => ({ warn() {} }),
      env: {},
    };
    const started = performance.now();
    const code = await runCli(${JSON.stringify(['audit', ...args])}, io);
    const ms = performance.now() - started;
    const maxRssKib = process.resourceUsage().maxRSS;
    const summary = JSON.parse(output).summary;
    const violations = Object.values(summary.byRule).reduce((a, b) => a + b, 0);
    process.stdout.write(JSON.stringify({ code, ms, maxRssMib: maxRssKib / 1024, audited: summary.audited, violations }));
  `;
}

/** `text` with its audit section replaced by `section` (or put before the targets, or at the end). */
export function spliceAuditSection(text: string, section: readonly string[]): string {
  const joined = section.join('\n');
  const begin = text.indexOf(auditBegin);
  const end = text.indexOf(auditEnd);
  if (begin !== -1 && end > begin) return `${text.slice(0, begin)}${joined}${text.slice(end + auditEnd.length)}`;
  const targets = text.indexOf('\n## Targets');
  if (targets !== -1) return `${text.slice(0, targets + 1)}${joined}\n\n${text.slice(targets + 1)}`;
  return `${text.trimEnd()}\n\n${joined}\n`;
}
