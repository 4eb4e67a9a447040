/**
 * `npm run try`: a cluster with tolerator in it, in one command, to try it on a real API server.
 *
 * - the pinned control plane (control-plane.ts: etcd, kube-apiserver, kube-scheduler,
 *   kube-controller-manager) on loopback, from `npm run control-plane:build`;
 * - tolerator serving on loopback with a certificate made for the run, registered with the
 *   shipped webhook configurations and RBAC (deploy/, rewritten to a `url` and a `caBundle` as
 *   tolerator-on-cluster.ts does for the e2e suites: every rule, selector and failure policy is
 *   the shipped one) and the example policy policies/dedicated-by-namespace-prefix.yaml
 *   (namespaces `team-<t>` belong to group team-<t>: a walkthrough needs no labels to set);
 * - three Nodes for the scheduler (fake-node.ts: Node objects created Ready, no kubelet, so pods
 *   are bound and never run): team-a-1 and team-b-1, labelled and tainted for their group, and
 *   general-1. Hook: when simulated nodes (KWOK) land in the launcher, they replace these here.
 *
 * It prints the kubeconfig and the kubectl to use and its own PID, and on Ctrl-C, on SIGTERM to
 * that PID, or when the npm that ran it exits (`kill` of a backgrounded `npm run try` reaches npm
 * only: parent-watch.ts), stops tolerator and the control plane, waits for each to exit and
 * removes its folder. Killed with SIGKILL it runs no code at all, and the reaper (reaper.ts)
 * kills what it started and removes the folder all the same: no process outlives it.
 *
 * Why a script beside the test launcher, not a `tolerator dev up` command: everything it runs
 * (the control plane binaries, fake nodes, tsx for tolerator's sources) is test infrastructure
 * that the package and the image do not ship, and src/ must not depend on it.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MINOR, REPO_ROOT } from './binaries.js';
import { createFakeNodes } from './fake-node.js';
import { watchParents } from './parent-watch.js';
import { startToleratorOnCluster } from './tolerator-on-cluster.js';

const usage = 'usage: npm run try [-- --version 1.35]';

/** The policy the walkthrough uses: the group comes from the namespace's name. */
const examplePolicy = 'dedicated-by-namespace-prefix.yaml';

/**
 * The log lines of a long session are not kept: startServe keeps every line in memory for the
 * tests that read them, and a try session may run for days. Above this many, the kept ones go.
 */
const keptLogLines = 1_000;

async function main(argv: readonly string[]): Promise<number> {
  let version: string;
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        version: { type: 'string', default: process.env.TOLERATOR_CONTROL_PLANE_VERSION ?? DEFAULT_MINOR },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      console.log(usage);
      return 0;
    }
    version = values.version;
  } catch (error) {
    console.error(`try: ${(error as Error).message}\n${usage}`);
    return 2;
  }

  const dir = mkdtempSync(join(tmpdir(), 'tolerator-try-'));
  const policies = join(dir, 'policies');
  mkdirSync(policies);
  copyFileSync(join(REPO_ROOT, 'policies', examplePolicy), join(policies, examplePolicy));
  console.log(`try: starting Kubernetes ${version} and tolerator in ${dir} (about a minute on two cores)`);
  let cluster;
  try {
    cluster = await startToleratorOnCluster({
      dir,
      plane: { version, scheduler: true, controllerManager: true },
      serveArgs: ['--policies', policies],
    });
  } catch (error) {
    console.error(`try: ${(error as Error).message}`);
    rmSync(dir, { recursive: true, force: true });
    return 1;
  }
  const { plane } = cluster;
  await createFakeNodes(cluster.objects, {
    'team-a-1': { labels: { tenant: 'team-a' }, taints: [{ key: 'tenant', value: 'team-a', effect: 'NoSchedule' }] },
    'team-b-1': { labels: { tenant: 'team-b' }, taints: [{ key: 'tenant', value: 'team-b', effect: 'NoSchedule' }] },
    'general-1': {},
  });
  const trim = setInterval(() => {
    const logs = cluster.tolerator()?.logs;
    if (logs !== undefined && logs.length > keptLogLines) logs.splice(0, logs.length - keptLogLines);
  }, 10_000);
  trim.unref();

  const served = cluster.tolerator();
  const pids = [...plane.pids(), ...(served?.child.pid === undefined ? [] : [served.child.pid])];
  writeFileSync(join(dir, 'pids'), pids.map((pid) => `${pid}\n`).join(''));
  const env = `export KUBECONFIG=${plane.kubeconfig} PATH=${join(dir, 'bin')}:$PATH`;
  writeFileSync(join(dir, 'env'), `${env}\n`);
  console.log(
    [
      `try: Kubernetes ${plane.version} at ${plane.server}, tolerator at https://127.0.0.1:${served?.port ?? '?'}`,
      `  webhooks and RBAC from deploy/, policy ${examplePolicy}; nodes team-a-1, team-b-1 (tainted tenant=<group>), general-1`,
      `  kubeconfig: ${plane.kubeconfig}`,
      `  kubectl:    ${join(dir, 'bin', 'kubectl')} (${plane.version})`,
      `  in another shell: ${env}`,
      `  stop: Ctrl-C, or kill ${process.pid}`,
      'try: ready',
    ].join('\n'),
  );

  const reason = await new Promise<string>((done) => {
    process.once('SIGINT', () => {
      done('SIGINT');
    });
    process.once('SIGTERM', () => {
      done('SIGTERM');
    });
    watchParents(done);
  });
  clearInterval(trim);
  console.log(`try: ${reason}, stopping tolerator and ${plane.pids().length} control plane processes`);
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
  console.log('try: stopped');
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
