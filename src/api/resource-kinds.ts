/**
 * The kinds tolerator reads, with their API group, version and resource name and where their pod
 * spec lives, so that a manifest can be turned into the AdmissionReview the API server would send.
 */
export interface ResourceKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly resource: string;
  /** Path of the pod spec inside the object: `spec` for a Pod, `spec.template.spec` for most workloads. */
  readonly podSpecPath: readonly string[];
  /**
   * The controller whose owner reference the pods made from this kind's template carry: the kind
   * itself, but a Deployment's pods belong to its ReplicaSets and a CronJob's to its Jobs. None
   * for a Pod and a PodTemplate, which no controller turns into pods.
   */
  readonly podController?: { readonly apiVersion: string; readonly kind: string };
}

const replicaSet = { apiVersion: 'apps/v1', kind: 'ReplicaSet' } as const;
const job = { apiVersion: 'batch/v1', kind: 'Job' } as const;

/** The DaemonSet, whose template PodNodeSelector mutates and whose pods DaemonSetTolerations recognises by their owner. */
export const daemonSetKind: ResourceKind = {
  group: 'apps',
  version: 'v1',
  kind: 'DaemonSet',
  resource: 'daemonsets',
  podSpecPath: ['spec', 'template', 'spec'],
  podController: { apiVersion: 'apps/v1', kind: 'DaemonSet' },
};

/**
 * Every kind tolerator reads: the one list (`tolerator export` derives its template sites from it
 * too, src/export/tenancy-cel.ts). Its order is the order `export` writes the templates' policies in.
 */
export const resourceKinds: readonly ResourceKind[] = [
  { group: '', version: 'v1', kind: 'Pod', resource: 'pods', podSpecPath: ['spec'] },
  daemonSetKind,
  {
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    resource: 'deployments',
    podSpecPath: ['spec', 'template', 'spec'],
    podController: replicaSet,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'ReplicaSet',
    resource: 'replicasets',
    podSpecPath: ['spec', 'template', 'spec'],
    podController: replicaSet,
  },
  {
    group: 'apps',
    version: 'v1',
    kind: 'StatefulSet',
    resource: 'statefulsets',
    podSpecPath: ['spec', 'template', 'spec'],
    podController: { apiVersion: 'apps/v1', kind: 'StatefulSet' },
  },
  { group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs', podSpecPath: ['spec', 'template', 'spec'], podController: job },
  {
    group: 'batch',
    version: 'v1',
    kind: 'CronJob',
    resource: 'cronjobs',
    podSpecPath: ['spec', 'jobTemplate', 'spec', 'template', 'spec'],
    podController: job,
  },
  {
    group: '',
    version: 'v1',
    kind: 'ReplicationController',
    resource: 'replicationcontrollers',
    podSpecPath: ['spec', 'template', 'spec'],
    podController: { apiVersion: 'v1', kind: 'ReplicationController' },
  },
  { group: '', version: 'v1', kind: 'PodTemplate', resource: 'podtemplates', podSpecPath: ['template', 'spec'] },
];

/** Looks a manifest's `apiVersion` and `kind` up; undefined for a kind tolerator does not read. */
export function resourceKindOf(apiVersion: unknown, kind: unknown): ResourceKind | undefined {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    return undefined;
  }
  const slash = apiVersion.indexOf('/');
  const group = slash === -1 ? '' : apiVersion.slice(0, slash);
  const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
  return resourceKinds.find((candidate) => candidate.group === group && candidate.version === version && candidate.kind === kind);
}

/** Looks a request's resource up (`apps`, `deployments`); undefined for a resource tolerator does not read. */
export function resourceKindByResource(group: string, resource: string): ResourceKind | undefined {
  return resourceKinds.find((candidate) => candidate.group === group && candidate.resource === resource);
}

/**
 * The controllers that are themselves owned by the workload a person writes, by kind: a
 * ReplicaSet by its Deployment, a Job by its CronJob (every kind whose pods another kind's
 * controller owns). One step each: nothing Kubernetes ships owns a Deployment or a CronJob.
 */
export const workloadOfController: ReadonlyMap<string, string> = new Map(
  resourceKinds.flatMap((kind) =>
    kind.podController === undefined || kind.podController.kind === kind.kind ? [] : [[kind.podController.kind, kind.kind] as const],
  ),
);
