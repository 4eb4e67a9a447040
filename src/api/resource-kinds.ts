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
}

const kinds: readonly ResourceKind[] = [
  { group: '', version: 'v1', kind: 'Pod', resource: 'pods', podSpecPath: ['spec'] },
  { group: '', version: 'v1', kind: 'PodTemplate', resource: 'podtemplates', podSpecPath: ['template', 'spec'] },
  {
    group: '',
    version: 'v1',
    kind: 'ReplicationController',
    resource: 'replicationcontrollers',
    podSpecPath: ['spec', 'template', 'spec'],
  },
  { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments', podSpecPath: ['spec', 'template', 'spec'] },
  { group: 'apps', version: 'v1', kind: 'ReplicaSet', resource: 'replicasets', podSpecPath: ['spec', 'template', 'spec'] },
  { group: 'apps', version: 'v1', kind: 'StatefulSet', resource: 'statefulsets', podSpecPath: ['spec', 'template', 'spec'] },
  { group: 'apps', version: 'v1', kind: 'DaemonSet', resource: 'daemonsets', podSpecPath: ['spec', 'template', 'spec'] },
  { group: 'batch', version: 'v1', kind: 'Job', resource: 'jobs', podSpecPath: ['spec', 'template', 'spec'] },
  {
    group: 'batch',
    version: 'v1',
    kind: 'CronJob',
    resource: 'cronjobs',
    podSpecPath: ['spec', 'jobTemplate', 'spec', 'template', 'spec'],
  },
];

/** Looks a manifest's `apiVersion` and `kind` up; undefined for a kind tolerator does not read. */
export function resourceKindOf(apiVersion: unknown, kind: unknown): ResourceKind | undefined {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    return undefined;
  }
  const slash = apiVersion.indexOf('/');
  const group = slash === -1 ? '' : apiVersion.slice(0, slash);
  const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
  return kinds.find((candidate) => candidate.group === group && candidate.version === version && candidate.kind === kind);
}

/** Looks a request's resource up (`apps`, `deployments`); undefined for a resource tolerator does not read. */
export function resourceKindByResource(group: string, resource: string): ResourceKind | undefined {
  return kinds.find((candidate) => candidate.group === group && candidate.resource === resource);
}
