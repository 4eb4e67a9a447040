/**
 * A Kubernetes control plane on loopback, as controller-runtime's envtest runs one: etcd and
 * kube-apiserver (and, when asked, kube-scheduler and kube-controller-manager) from the binaries
 * `npm run control-plane:build` made, on free 127.0.0.1 ports, with a PKI made for the run and
 * no kubelet. Used by the e2e and differential suites, the e2e benchmark and `npm run
 * control-plane` (test/cluster/launch.ts).
 *
 * What differs from a real cluster, and why:
 * - TaintNodesByCondition is off: it taints every new Node `node.kubernetes.io/not-ready`, which
 *   only a kubelet's Ready heartbeat would lift; the tests create Nodes Ready from the start.
 * - ServiceAccount admission is off: it refuses pods in a namespace until the token controller has
 *   made its `default` ServiceAccount, a race every test would have to wait out.
 * - kube-controller-manager runs without node-lifecycle-controller: Nodes without a kubelet send
 *   no heartbeats, and it would taint them unreachable and evict every pod within a minute.
 * Both come back with `nodeLifecycle`, for the suites whose Nodes have a simulated kubelet that
 * renews their Leases (kwok.ts): then the cluster taints and evicts as a real one does.
 * Everything else — admission order, defaulting, validation, webhooks, the scheduler's filters —
 * is upstream's, as released.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CONTROL_PLANE_BINARIES, findControlPlane, type ControlPlaneBinaries, type ControlPlaneBinary } from './binaries.js';
import { createControlPlanePki, signCertificate, type ControlPlanePki, type Pair } from './pki.js';
import { startReaper } from './reaper.js';

export interface ControlPlaneOptions {
  /** Where the PKI, etcd's data, the logs, `kubeconfig`, `ready` and `bin/` go; made if missing. */
  readonly dir: string;
  /** The Kubernetes minor whose build to run (default: TOLERATOR_CONTROL_PLANE_VERSION, else 1.35). */
  readonly version?: string;
  /** kube-apiserver's --enable-admission-plugins, added to NodeRestriction. */
  readonly enableAdmissionPlugins?: readonly string[];
  /** kube-apiserver's --disable-admission-plugins, added to ServiceAccount and TaintNodesByCondition. */
  readonly disableAdmissionPlugins?: readonly string[];
  readonly admissionControlConfigFile?: string;
  /** --feature-gates for every component, as `K=V,...`. */
  readonly featureGates?: string;
  /** Further kube-apiserver flags (`--name=value`), after the ones set here. */
  readonly apiserverArgs?: readonly string[];
  readonly scheduler?: boolean;
  readonly controllerManager?: boolean;
  /**
   * kube-controller-manager (implied) runs every default controller, the node lifecycle controller
   * too, with these periods, and kube-apiserver's TaintNodesByCondition admission plugin is on, as
   * on a real cluster: for Nodes whose Leases something renews (kwok.ts). Unset: neither, and the
   * Nodes of fake-node.ts keep exactly the status and taints they are given.
   */
  readonly nodeLifecycle?: NodeLifecycleOptions;
  /**
   * `dir` is a temporary folder of the caller's: removed too if the calling process dies without
   * stopping the plane (see reaper.ts). Never for a folder a person named (`npm run control-plane`).
   */
  readonly temporaryDir?: boolean;
}

/** kube-controller-manager's node lifecycle flags (upstream defaults: 5 s, 50 s, 60 s, 0.1). */
export interface NodeLifecycleOptions {
  /** --node-monitor-period: how often the controller looks at every Node's Lease and status. */
  readonly monitorPeriodSeconds: number;
  /** --node-monitor-grace-period: how long a Node may go without a Lease renewal before it is Unknown. */
  readonly monitorGracePeriodSeconds: number;
  /** --node-eviction-rate: nodes tainted NoExecute per second in a healthy zone (upstream's 0.1 unless given). */
  readonly evictionRate?: number;
}

/** The kube-controller-manager flags for `options`: which controllers, and their periods. */
export function nodeLifecycleFlags(options: NodeLifecycleOptions | undefined): string[] {
  // Nodes here have no kubelet and send no heartbeat unless something renews their Leases: without
  // one, the node lifecycle controller would taint them unreachable and have their pods evicted.
  if (options === undefined) return ['--controllers=*,-node-lifecycle-controller'];
  return [
    '--controllers=*',
    `--node-monitor-period=${options.monitorPeriodSeconds}s`,
    `--node-monitor-grace-period=${options.monitorGracePeriodSeconds}s`,
    ...(options.evictionRate === undefined ? [] : [`--node-eviction-rate=${options.evictionRate}`]),
  ];
}

export interface ControlPlane {
  readonly dir: string;
  /** The Kubernetes version the binaries report, e.g. v1.35.8. */
  readonly version: string;
  /** https://127.0.0.1:PORT */
  readonly server: string;
  /** A kubeconfig for cluster-admin (O=system:masters). */
  readonly kubeconfig: string;
  /** The CA that signs kube-apiserver's serving certificate and every client certificate. */
  readonly ca: Pair;
  readonly binaries: ControlPlaneBinaries;
  /** A kubeconfig for `user` in `groups` (a client certificate this plane's CA signs), written into dir. */
  kubeconfigFor(user: string, groups: readonly string[]): Promise<string>;
  /** The PIDs of the processes this plane started and that are still running. */
  pids(): number[];
  /**
   * Kills `child` with the plane's own processes if the calling process dies without stopping
   * them (reaper.ts); for a process started beside the plane, such as `tolerator serve`.
   */
  adopt(child: ChildProcess): void;
  /** Stops every process it started (SIGTERM, then SIGKILL after 10 s) and waits for each to exit. */
  stop(): Promise<void>;
}

/** The last lines of a component's log, for the error that says it failed. */
function tail(file: string, lines = 25): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function kubeconfigYaml(server: string, ca: string, client: Pair, user: string): string {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: tolerator-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(ca)}`,
    'users:',
    `- name: ${JSON.stringify(user)}`,
    '  user:',
    `    client-certificate-data: ${b64(client.cert)}`,
    `    client-key-data: ${b64(client.key)}`,
    'contexts:',
    '- name: tolerator-test',
    '  context:',
    '    cluster: tolerator-test',
    `    user: ${JSON.stringify(user)}`,
    'current-context: tolerator-test',
    '',
  ].join('\n');
}

interface Started {
  readonly name: string;
  readonly child: ChildProcess;
  readonly log: string;
  exited: boolean;
}

/** One GET; resolves to the status and body, or undefined when nothing answered. */
function probe(
  url: string,
  tls?: { ca: string; cert: string; key: string } | 'insecure',
): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const options =
      tls === undefined ? {} : tls === 'insecure' ? { rejectUnauthorized: false } : { ca: tls.ca, cert: tls.cert, key: tls.key };
    const req = (url.startsWith('https:') ? httpsRequest : httpRequest)(url, { ...options, timeout: 2_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => {
      resolve(undefined);
    });
    req.end();
  });
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const binaries = findControlPlane(options.version);
  if (typeof binaries === 'string') throw new Error(binaries);
  const dir = options.dir;
  for (const sub of ['pki', 'logs', 'bin']) mkdirSync(join(dir, sub), { recursive: true });
  rmSync(join(dir, 'ready'), { force: true });
  for (const binary of CONTROL_PLANE_BINARIES) {
    const link = join(dir, 'bin', binary);
    rmSync(link, { force: true });
    symlinkSync(binaries.path(binary), link);
  }

  const pki: ControlPlanePki = await createControlPlanePki();
  const file = (name: string, text: string): string => {
    const path = join(dir, 'pki', name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  const caFile = file('ca.crt', pki.ca.cert);
  const serving = { cert: file('apiserver.crt', pki.apiserver.cert), key: file('apiserver.key', pki.apiserver.key) };
  const saKey = file('sa.key', pki.serviceAccount.privateKey);
  const saPub = file('sa.pub', pki.serviceAccount.publicKey);

  // Started before any component, so none can outlive this process (reaper.ts).
  const reaper = startReaper();
  if (options.temporaryDir === true) reaper.removeOnDeath(dir);
  const adopt = (child: ChildProcess): void => {
    const pid = child.pid;
    if (pid === undefined) return;
    reaper.watch(pid);
    child.once('exit', () => {
      reaper.exited(pid);
    });
  };
  const started: Started[] = [];
  const launch = (name: string, binary: ControlPlaneBinary, args: readonly string[]): Started => {
    const log = join(dir, 'logs', `${name}.log`);
    const fd = openSync(log, 'w');
    const child = spawn(binaries.path(binary), args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    const entry: Started = { name, child, log, exited: false };
    child.once('exit', () => {
      entry.exited = true;
    });
    adopt(child);
    started.push(entry);
    return entry;
  };
  const stop = async (): Promise<void> => {
    // Reverse order: the clients of the API server first, etcd last.
    for (const entry of [...started].reverse()) {
      if (entry.exited) continue;
      entry.child.kill('SIGTERM');
      const exited = once(entry.child, 'exit');
      const timeout = sleep(10_000).then(() => 'timeout' as const);
      if ((await Promise.race([exited, timeout])) === 'timeout') {
        entry.child.kill('SIGKILL');
        await exited;
      }
    }
    // Everything it watched has exited: the watcher may go (a second stop() is a no-op).
    reaper.close();
  };
  const waitFor = async (entry: Started, check: () => Promise<boolean>, seconds: number): Promise<void> => {
    const deadline = Date.now() + seconds * 1000;
    while (Date.now() < deadline) {
      if (entry.exited) break;
      if (await check()) return;
      await sleep(250);
    }
    const why = entry.exited
      ? `exited with ${String(entry.child.exitCode ?? entry.child.signalCode)}`
      : `was not ready within ${seconds} s`;
    await stop();
    throw new Error(`control plane: ${entry.name} ${why}; the end of ${entry.log}:\n${tail(entry.log)}`);
  };

  try {
    const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdClient}`;
    const etcd = launch('etcd', 'etcd', [
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      // A test cluster's data is thrown away: skipping fsync makes every write a memory write.
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    await waitFor(etcd, async () => (await probe(`${etcdUrl}/health`))?.body.includes('"health":"true"') === true, 30);

    const server = `https://127.0.0.1:${apiPort}`;
    const admissionEnabled = ['NodeRestriction', ...(options.enableAdmissionPlugins ?? [])];
    const admissionDisabled = [
      'ServiceAccount',
      ...(options.nodeLifecycle === undefined ? ['TaintNodesByCondition'] : []),
      ...(options.disableAdmissionPlugins ?? []),
    ];
    const apiserver = launch('kube-apiserver', 'kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints validation
      // refuses (loopback): through 1.36 kube-apiserver started all the same, and from 1.37 it
      // refuses to start ("cannot use public IP 127.0.0.1 with endpoint
      // reconciler", pkg/controlplane/instance.go at v1.37.2). Nothing reaches the API server
      // through that Service on loopback, so there is nothing to reconcile, on every minor.
      '--endpoint-reconciler-type=none',
      `--cert-dir=${join(dir, 'pki')}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      `--client-ca-file=${caFile}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      // Node: a kubelet's identity (system:node:NAME) may create its own mirror pods, as on a
      // real cluster; RBAC for everyone else.
      '--authorization-mode=Node,RBAC',
      `--enable-admission-plugins=${admissionEnabled.join(',')}`,
      `--disable-admission-plugins=${admissionDisabled.join(',')}`,
      ...(options.admissionControlConfigFile === undefined
        ? []
        : [`--admission-control-config-file=${options.admissionControlConfigFile}`]),
      ...(options.featureGates === undefined ? [] : [`--feature-gates=${options.featureGates}`]),
      ...(options.apiserverArgs ?? []),
    ]);
    const adminTls = { ca: pki.ca.cert, cert: pki.admin.cert, key: pki.admin.key };
    // Two cores start kube-apiserver's post-start hooks (RBAC bootstrap, priority and fairness) in
    // 10-20 s; 90 s leaves room for a machine that is busy with something else.
    await waitFor(apiserver, async () => (await probe(`${server}/readyz`, adminTls))?.status === 200, 90);

    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigYaml(server, pki.ca.cert, pki.admin, 'admin'), { mode: 0o600 });

    const gates = options.featureGates === undefined ? [] : [`--feature-gates=${options.featureGates}`];
    if (options.scheduler === true) {
      const port = await freePort();
      const scheduler = launch('kube-scheduler', 'kube-scheduler', [
        `--kubeconfig=${kubeconfig}`,
        `--authentication-kubeconfig=${kubeconfig}`,
        `--authorization-kubeconfig=${kubeconfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${join(dir, 'pki', 'scheduler')}`,
        ...gates,
      ]);
      await waitFor(scheduler, async () => (await probe(`https://127.0.0.1:${port}/healthz`, 'insecure'))?.status === 200, 60);
    }
    if (options.controllerManager === true || options.nodeLifecycle !== undefined) {
      const port = await freePort();
      const controllerManager = launch('kube-controller-manager', 'kube-controller-manager', [
        `--kubeconfig=${kubeconfig}`,
        `--authentication-kubeconfig=${kubeconfig}`,
        `--authorization-kubeconfig=${kubeconfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${join(dir, 'pki', 'controller-manager')}`,
        ...nodeLifecycleFlags(options.nodeLifecycle),
        `--service-account-private-key-file=${saKey}`,
        `--root-ca-file=${caFile}`,
        '--use-service-account-credentials=false',
        ...gates,
      ]);
      await waitFor(controllerManager, async () => (await probe(`https://127.0.0.1:${port}/healthz`, 'insecure'))?.status === 200, 60);
    }

    writeFileSync(join(dir, 'ready'), `${server}\n`);
    return {
      dir,
      version: binaries.version,
      server,
      kubeconfig,
      ca: pki.ca,
      binaries,
      async kubeconfigFor(user, groups) {
        const client = await signCertificate(pki.ca, { commonName: user, organizations: groups, usage: 'client' });
        const path = join(dir, `kubeconfig-${user.replace(/[^A-Za-z0-9.-]/g, '_')}`);
        writeFileSync(path, kubeconfigYaml(server, pki.ca.cert, client, user), { mode: 0o600 });
        return path;
      },
      pids: () => started.filter((entry) => !entry.exited && entry.child.pid !== undefined).map((entry) => entry.child.pid!),
      adopt,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
