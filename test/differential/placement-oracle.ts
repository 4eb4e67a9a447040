/**
 * The two sides of the scheduler and taint-eviction comparisons: what kube-scheduler did with each
 * pod (bound, or PodScheduled=False with reason Unschedulable), read from the API server, and
 * what `tolerator simulate -o json` says of the same pods on the same Nodes. simulate runs as the
 * CLI's own function (simulateCommand, with in-memory files), on the pods and the NodeList exactly
 * as the API server returns them: nothing of its logic is repeated here.
 */
import type * as k8s from '@kubernetes/client-node';
import { simulateCommand, type PodReport } from '../../src/cli/simulate.js';
import { pollUntil } from '../cluster/poll.js';
import { plain, type Manifest } from '../cluster/tolerator-on-cluster.js';
import { runCommand } from '../support/command-io.js';

export interface PodCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

export interface StoredPod extends Manifest {
  readonly metadata: { name: string; namespace: string; deletionTimestamp?: string } & Record<string, unknown>;
  readonly spec: { nodeName?: string; tolerations?: unknown[] } & Record<string, unknown>;
  readonly status?: { conditions?: PodCondition[] };
}

/** The scheduler's verdict: the node it bound the pod to, or its Unschedulable condition. */
export type Decision =
  { readonly bound: string; readonly pod: StoredPod } | { readonly unschedulable: PodCondition; readonly pod: StoredPod };

export function decisionOf(pod: StoredPod): Decision | undefined {
  if (pod.spec.nodeName !== undefined && pod.spec.nodeName !== '') return { bound: pod.spec.nodeName, pod };
  const scheduled = pod.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
  // Pending means the scheduler tried and found no node: not merely "not bound yet", and not a
  // pod held by a scheduling gate (reason SchedulingGated).
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') return { unschedulable: scheduled, pod };
  return undefined;
}

export async function listPods(objects: k8s.KubernetesObjectApi, namespace: string): Promise<StoredPod[]> {
  return (plain(await objects.list('v1', 'Pod', namespace)) as { items: StoredPod[] }).items;
}

/**
 * Waits until the scheduler has decided every pod of `namespace` (`expected` of them), reading the
 * namespace's pods with one LIST a second, and returns the decisions by pod name.
 */
export async function schedulerDecisions(
  objects: k8s.KubernetesObjectApi,
  namespace: string,
  expected: number,
  timeoutMs: number,
): Promise<Map<string, Decision>> {
  let undecided = expected;
  return pollUntil(
    `kube-scheduler's decision on each of the ${expected} pods in ${namespace}`,
    async () => {
      const pods = await listPods(objects, namespace);
      const decided = new Map<string, Decision>();
      for (const pod of pods) {
        const decision = decisionOf(pod);
        if (decision !== undefined) decided.set(pod.metadata.name, decision);
      }
      undecided = expected - decided.size;
      return pods.length === expected && undecided === 0 ? decided : undefined;
    },
    { timeoutMs, intervalMs: 1_000, describe: () => `${undecided} pods undecided` },
  );
}

/** A pod as a List item carries no kind; simulate reads only objects that say what they are. */
function withKind(pod: StoredPod): Manifest {
  return { ...pod, apiVersion: 'v1', kind: 'Pod' };
}

/**
 * `tolerator simulate --nodes NODES PODS -o json [--running]` with the gate given, on the stored
 * pods and the NodeList as listed. Returns each pod's report by pod name.
 */
export async function simulate(
  pods: readonly StoredPod[],
  nodeList: unknown,
  options: { readonly comparisonOperators: boolean; readonly running?: boolean },
): Promise<Map<string, PodReport>> {
  const files = {
    'nodes.json': JSON.stringify(nodeList),
    'pods.json': JSON.stringify({ apiVersion: 'v1', kind: 'List', items: pods.map(withKind) }),
  };
  const argv = [
    '--nodes',
    'nodes.json',
    'pods.json',
    '-o',
    'json',
    `--feature-gates=TaintTolerationComparisonOperators=${String(options.comparisonOperators)}`,
    ...(options.running === true ? ['--running'] : []),
  ];
  const run = await runCommand(simulateCommand, argv, files);
  // 0: every pod fits somewhere; 1: some fits nowhere. Anything else is a usage or input error.
  if (run.code !== 0 && run.code !== 1) throw new Error(`tolerator simulate exited ${run.code}: ${run.stderr}`);
  const reports = JSON.parse(run.stdout) as PodReport[];
  return new Map(reports.map((report) => [report.pod.replace(/^Pod\//, ''), report]));
}

/** The nodes a report lists as schedulable, sorted. */
export function schedulableNodes(report: PodReport | undefined): string[] {
  return (report?.nodes ?? [])
    .filter((placement) => placement.schedulable)
    .map((placement) => placement.node)
    .sort();
}
