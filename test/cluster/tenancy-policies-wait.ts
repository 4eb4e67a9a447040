/**
 * Waiting for `tolerator export`'s tenancy ValidatingAdmissionPolicies to take effect on a
 * kube-apiserver (installExportedPolicies in exported-policies.ts): each policy is compiled and
 * enforced on its own, some time after it is stored, so a suite that only waited for the mutating
 * policy sent its first tenancy cases to a server that did not refuse them yet.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { resourceKindByResource } from '../../src/api/resource-kinds.js';
import { exportedNames } from '../../src/export/export-policies.js';
import { asKubernetesObject, type Manifest } from './tolerator-on-cluster.js';

/**
 * Waits until every exported tenancy ValidatingAdmissionPolicy refuses, by name, a dry-run object
 * of its first resource in `namespace` whose pod spec tolerates every taint (`Exists`, no key:
 * another group's taint for a namespace that is not infrastructure).
 */
export async function waitForTenancyPolicies(
  objects: k8s.KubernetesObjectApi,
  documents: readonly Manifest[],
  namespace: string,
): Promise<void> {
  const tenancy = documents.filter(
    (document) => document.kind === 'ValidatingAdmissionPolicy' && String(document.metadata.name).startsWith(exportedNames.tenancy),
  );
  for (const policy of tenancy) {
    const name = String(policy.metadata.name);
    const rule = (policy.spec as { matchConstraints: { resourceRules: { apiGroups: string[]; resources: string[] }[] } }).matchConstraints
      .resourceRules[0];
    const kind = rule === undefined ? undefined : resourceKindByResource(rule.apiGroups[0] ?? '', rule.resources[0] ?? '');
    if (kind === undefined) throw new Error(`${name}: no resource kind to probe it with`);
    const probe = wildcardProbe(kind.kind, kind.group, kind.podSpecPath, namespace);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const message = await objects.create(asKubernetesObject(probe), undefined, 'All').then(
        () => '',
        (error: unknown) => String((error as { body?: unknown }).body ?? error),
      );
      if (message.includes(`ValidatingAdmissionPolicy '${name}'`)) break;
      if (Date.now() > deadline) throw new Error(`the exported ValidatingAdmissionPolicy ${name} did not take effect within 60 s`);
      await sleep(250);
    }
  }
}

/** A minimal valid object of `kind` whose pod spec (at `podSpecPath`) tolerates every taint. */
function wildcardProbe(kind: string, group: string, podSpecPath: readonly string[], namespace: string): Manifest {
  const labels = { 'tolerator.dev/probe': 'export' };
  const podSpec = {
    containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
    tolerations: [{ operator: 'Exists' }],
    ...(kind === 'Job' || kind === 'CronJob' ? { restartPolicy: 'Never' } : {}),
  };
  const template = { metadata: { labels }, spec: podSpec };
  const specs: Record<string, Record<string, unknown>> = {
    Pod: { spec: podSpec },
    PodTemplate: { template },
    ReplicationController: { spec: { selector: labels, template } },
    Job: { spec: { template } },
    CronJob: { spec: { schedule: '0 0 * * *', jobTemplate: { spec: { template } } } },
  };
  const body = specs[kind] ?? { spec: { selector: { matchLabels: labels }, template } };
  if (
    podSpecPath.join('.') !==
    (kind === 'Pod'
      ? 'spec'
      : kind === 'PodTemplate'
        ? 'template.spec'
        : kind === 'CronJob'
          ? 'spec.jobTemplate.spec.template.spec'
          : 'spec.template.spec')
  )
    throw new Error(`${kind}: the probe puts its pod spec elsewhere than ${podSpecPath.join('.')}`);
  return {
    apiVersion: group === '' ? 'v1' : `${group}/v1`,
    kind,
    metadata: { name: 'export-probe', namespace },
    ...body,
  };
}
