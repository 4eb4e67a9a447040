/**
 * `tolerator simulate --nodes FILE POD_FILE...`: on which nodes each pod may be scheduled, which
 * nodes it would rather avoid, and when NoExecute taints would evict it (src/scheduling).
 *
 * Input files hold Pods or workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
 * CronJob, ReplicationController, PodTemplate, or a `List` of them), as multi-document YAML or
 * JSON; a workload is judged by the pod its template makes. A DaemonSet's pod carries the
 * DaemonSet controller's tolerations, which the controller adds to every daemon pod whether or not
 * tolerator runs. `--mutate` first passes each pod through tolerator's admission pipeline (the
 * admission flags apply; `--cluster-state` defaults to the `--nodes` file, which may also hold
 * Namespaces), so the result is what the pod would look like in a cluster running tolerator.
 *
 * Exit code: 0 when every pod can be scheduled on at least one node (with `--running`: may keep
 * running on at least one), 1 otherwise or when `--mutate` denies a pod, 2 on a usage or input error.
 */
import { terminalLines, terminalSafe } from '../audit/audit-summary.js';
import { parseAllDocuments, stringify } from 'yaml';
import type { FeatureGates } from '../api/feature-gates.js';
import type { Node, Pod } from '../api/types.js';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import type { Pipeline } from '../admission/pipeline.js';
import { staticClusterFacts } from '../kube/cluster-state-file.js';
import type { PluginName } from '../plugins/plugin.js';
import { comparisonGateNote, describeTaint } from '../scheduling/noexecute-eviction.js';
import { evaluatePlacements, type Placement } from '../scheduling/placement.js';
import { emptyPolicySet, type PolicySet } from '../tenancy/policy-set.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import type { AdmissionSettings } from '../admission/pipeline-settings.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { admitObject } from '../admission/admit-object.js';
import { pipelineFor } from '../admission/pipeline-settings.js';
import { loadPolicies } from '../server/tenancy-policies.js';
import { readClusterState } from './runtime.js';
import { isJsonObject } from '../api/types.js';
import { podFromTemplate } from '../api/pod-template.js';
import { resourceKindOf } from '../api/resource-kinds.js';

export const simulateFlags = {
  nodes: { kind: 'string', placeholder: 'FILE', help: 'Node manifests (multi-document YAML, JSON, or a v1 List) to simulate against' },
  running: { kind: 'boolean', help: 'judge each pod as already running on each node: only NoExecute taints act' },
  mutate: { kind: 'boolean', help: "pass each pod through tolerator's admission pipeline first (the admission flags apply)" },
  output: { kind: 'string', placeholder: 'FORMAT', short: 'o', help: 'output format (default table)', choices: ['table', 'json', 'yaml'] },
  ...admissionFlags,
} as const satisfies Record<string, FlagSpec>;

export const simulateCommand: CommandDefinition = {
  name: 'simulate',
  summary: 'on which nodes pods may schedule, are avoided, or get evicted',
  arguments: [['<file...>', 'files of Pods or workloads, multi-document YAML or JSON; - for standard input']],
  flags: simulateFlags,
  outcomes: {
    ok: 'every pod can be scheduled on at least one node (with --running: may keep running on one)',
    found: 'a pod fits no node, or --mutate denies it',
  },
  run: simulate,
};

export interface PodReport {
  readonly pod: string;
  readonly nodes: readonly Placement[];
  /** Set when `--mutate` denied the pod: it would not exist, so no node is judged. */
  readonly denied?: string;
}

/** A pod to judge and the name to report it by. */
interface Subject {
  readonly label: string;
  readonly pod: Pod;
  readonly namespace: string;
  readonly fromDaemonSet: boolean;
}

class InputError extends Error {}

async function simulate(flags: ParsedFlags, io: CommandIo): Promise<number> {
  let prepared: {
    subjects: Subject[];
    nodes: readonly Node[];
    settings: AdmissionSettings;
    facts: ClusterFacts;
    output: 'table' | 'json' | 'yaml';
    running: boolean;
    mutate: boolean;
  };
  {
    const str = (name: keyof typeof simulateFlags): string | undefined => flags.values.get(name) as string | undefined;
    const output = (str('output') ?? 'table') as 'table' | 'json' | 'yaml';
    const nodesFile = str('nodes');
    if (nodesFile === undefined) throw new UsageError('--nodes FILE is required');
    if (flags.positionals.length === 0) throw new UsageError('give at least one file of pods or workloads');
    const settings = readAdmissionSettings(flags);
    const warn = (warning: string): void => {
      io.stderr(`tolerator simulate: ${terminalSafe(warning)}\n`);
    };
    // Warnings about the nodes file wait until it is known to hold nodes at all.
    const nodeWarnings: string[] = [];
    const nodeState = readClusterState(nodesFile, io.readFile, (warning) => nodeWarnings.push(warning));
    if (nodeState.nodes.length === 0) throw new InputError(`${nodesFile}: no v1 Node found`);
    nodeWarnings.forEach(warn);
    // Only its namespaces are used (the nodes come from --nodes); its warnings are not shown.
    const clusterState =
      settings.clusterStateFile === undefined ? nodeState : readClusterState(settings.clusterStateFile, io.readFile, () => undefined);
    const subjects = flags.positionals.flatMap((file) =>
      podsInFile(file === '-' ? Buffer.from(io.readStdin()).toString('utf8') : io.readFile(file), file, (warning) => {
        warn(warning);
      }),
    );
    if (subjects.length === 0) throw new InputError('no pod or workload found in the given files');
    prepared = {
      subjects,
      nodes: nodeState.nodes,
      settings,
      facts: staticClusterFacts({ namespaces: clusterState.namespaces, nodes: nodeState.nodes }),
      output,
      running: flags.values.get('running') === true,
      mutate: flags.values.get('mutate') === true,
    };
  }

  const { subjects, nodes, settings, facts, running } = prepared;
  const pipeline: Pipeline = prepared.mutate
    ? pipelineFor(settings, facts, policySource(settings))
    : pipelineFor({ ...settings, enabled: daemonSetOnly }, facts, () => emptyPolicySet);
  const reports: PodReport[] = [];
  for (const subject of subjects) {
    reports.push(await judge(subject, nodes, settings.gates, running, prepared.mutate || subject.fromDaemonSet ? pipeline : undefined));
  }

  io.stdout(
    prepared.output === 'json'
      ? `${JSON.stringify(reports, null, 2)}\n`
      : prepared.output === 'yaml'
        ? stringify(reports)
        : // The table quotes the pods and nodes files: their control characters are written escaped.
          terminalLines(renderTable(reports)),
  );
  const placed = (report: PodReport): boolean => report.denied === undefined && report.nodes.some((placement) => placement.schedulable);
  for (const report of reports.filter((r) => !placed(r))) {
    io.stderr(
      terminalSafe(
        report.denied === undefined
          ? `tolerator simulate: ${report.pod} fits none of the ${nodes.length} nodes`
          : `tolerator simulate: ${report.pod} is denied by admission: ${report.denied}`,
      ) + '\n',
    );
  }
  return reports.every(placed) ? 0 : 1;
}

/** Without --mutate, only the DaemonSet controller's tolerations are applied (the controller always adds them). */
const daemonSetOnly: readonly PluginName[] = ['DaemonSetTolerations'];

function policySource(settings: AdmissionSettings): () => PolicySet {
  if (settings.policiesDir === undefined) return () => emptyPolicySet;
  const set = loadPolicies(settings.policiesDir, '; ');
  return () => set;
}

async function judge(
  subject: Subject,
  nodes: readonly Node[],
  gates: FeatureGates,
  running: boolean,
  pipeline: Pipeline | undefined,
): Promise<PodReport> {
  let pod = subject.pod;
  if (pipeline !== undefined) {
    const run = await admitObject(pipeline, {
      object: pod,
      operation: 'CREATE',
      namespace: subject.namespace,
      sides: ['mutate', 'validate'],
    });
    if (!run.allowed) {
      return { pod: subject.label, nodes: [], denied: run.message ?? 'denied' };
    }
    pod = run.object;
  }
  const placements = evaluatePlacements(pod, nodes, gates, { running });
  return { pod: subject.label, nodes: placements.map((placement, index) => withGateNotes(placement, pod, nodes[index], gates)) };
}

/**
 * Each "taint T is not tolerated" reason followed by why, when it is the comparison-operator
 * gate: a Gt/Lt toleration written for T counts only with TaintTolerationComparisonOperators on.
 */
function withGateNotes(placement: Placement, pod: Pod, node: Node | undefined, gates: FeatureGates): Placement {
  const tolerations = pod.spec?.tolerations ?? [];
  const notes = (node?.spec?.taints ?? [])
    .map((taint) => ({ prefix: `taint ${describeTaint(taint)} is not tolerated`, note: comparisonGateNote(tolerations, taint, gates) }))
    .filter((entry) => entry.note !== '');
  if (notes.length === 0) return placement;
  const reasons = placement.reasons.map((reason) => {
    const found = notes.find((entry) => reason === entry.prefix || reason.startsWith(`${entry.prefix}:`));
    return found === undefined ? reason : `${found.prefix}${found.note}${reason.slice(found.prefix.length)}`;
  });
  return { ...placement, reasons };
}

/** Every pod a file describes: Pods as they are, workloads as the pod their template makes. */
export function podsInFile(text: string, file: string, warn: (warning: string) => void): Subject[] {
  const subjects: Subject[] = [];
  parseAllDocuments(text).forEach((document, index) => {
    const where = `${file}: document ${index + 1}`;
    const [error] = document.errors;
    if (error !== undefined) throw new InputError(`${where}: ${error.message.split('\n', 1)[0] ?? ''}`);
    const value: unknown = document.toJS();
    if (value !== null && value !== undefined) collect(value, where);
  });
  return subjects;

  function collect(value: unknown, where: string): void {
    if (!isJsonObject(value)) throw new InputError(`${where}: expected a Kubernetes object`);
    const kind = typeof value.kind === 'string' ? value.kind : '';
    const metadata = isJsonObject(value.metadata) ? value.metadata : {};
    const name =
      typeof metadata.name === 'string' ? metadata.name : typeof metadata.generateName === 'string' ? metadata.generateName : '(unnamed)';
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : 'default';
    const label = `${kind}/${name}`;
    if (kind === 'List' || kind.endsWith('List')) {
      const items = Array.isArray(value.items) ? (value.items as unknown[]) : [];
      items.forEach((item, i) => {
        collect(item, `${where}, items[${i}]`);
      });
      return;
    }
    const resourceKind = resourceKindOf(value.apiVersion, value.kind);
    if (resourceKind === undefined && isDraKind(value.apiVersion, kind)) {
      // simulate places pods on the nodes of the cluster state; it reads no ResourceSlice, so it
      // cannot say which devices a claim would be allocated. The admission verdict on the object is explain's.
      warn(
        `${where}: ${String(value.apiVersion)} ${kind} not simulated: simulate places pods on nodes and reads no ResourceSlices; run tolerator explain on it for its device tolerations, defaults and group`,
      );
      return;
    }
    if (resourceKind === undefined) {
      warn(`${where}: ${kind === '' ? 'an object without kind' : `${String(value.apiVersion)} ${kind}`} ignored (not a pod or workload)`);
      return;
    }
    const pod = podFromTemplate(value, resourceKind, namespace);
    if (pod === undefined) throw new InputError(`${where}: ${label} has no pod template spec`);
    // A DaemonSet's pod is admitted even without --mutate: the DaemonSet controller's tolerations are DaemonSetTolerations' to add.
    subjects.push({ label, pod, namespace, fromDaemonSet: resourceKind.kind === 'DaemonSet' });
  }
}

/** A DRA object tolerator admits (resource.k8s.io ResourceClaim, ResourceClaimTemplate, DeviceTaintRule). */
function isDraKind(apiVersion: unknown, kind: string): boolean {
  return (
    typeof apiVersion === 'string' &&
    apiVersion.startsWith('resource.k8s.io/') &&
    (kind === 'ResourceClaim' || kind === 'ResourceClaimTemplate' || kind === 'DeviceTaintRule')
  );
}

/** A table for a person: one row per pod and node, the pod named on its first row only. */
export function renderTable(reports: readonly PodReport[]): string {
  const header = ['POD', 'NODE', 'SCHEDULABLE', 'PREFERRED', 'EVICTED', 'REASONS'];
  const rows: string[][] = [];
  for (const report of reports) {
    if (report.denied !== undefined) {
      rows.push([report.pod, '-', '-', '-', '-', `denied by admission: ${report.denied}`]);
      continue;
    }
    report.nodes.forEach((placement, index) => {
      rows.push([
        index === 0 ? report.pod : '',
        placement.node,
        placement.schedulable ? 'yes' : 'no',
        placement.preferred ? 'yes' : 'no',
        describeEviction(placement.evictAfterSeconds),
        placement.reasons.join('; '),
      ]);
    });
  }
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[header, ...rows].map(line).join('\n')}\n`;
}

function describeEviction(seconds: number | null): string {
  if (seconds === null) return 'never';
  return seconds === 0 ? 'at once' : `after ${seconds}s`;
}
