/**
 * A kube-apiserver with `tolerator export`'s policies and no webhook: the third subject of the
 * differential tests (test/differential/export.differential.ts) and of test/e2e/export.e2e.ts.
 * The manifests are the ones `tolerator export` prints for the same settings (exportPolicies, the
 * command's own decision function), for the minor of the binaries in use: on 1.35 the API server
 * gets the MutatingAdmissionPolicy gate and `--runtime-config` the output's header asks for.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type * as k8s from '@kubernetes/client-node';
import { defaultGatesAtVersion } from '../../src/api/feature-gate-history.js';
import { exportPolicies, exportVersions, type ExportSettings, type ExportVersion } from '../../src/export/export-policies.js';
import { defaultTolerationSeconds } from '../../src/plugins/default-toleration-seconds.js';
import { selectPlugins } from '../../src/plugins/registry.js';
import { findControlPlane } from './binaries.js';
import { waitForTenancyPolicies } from './tenancy-policies-wait.js';
import type { ControlPlaneOptions } from './control-plane.js';
import { clientsFor, createObject, plain, asKubernetesObject, type Manifest } from './tolerator-on-cluster.js';

/** The Kubernetes minor of the binaries in use (their VERSION file), as export's --kubernetes-version. */
export function controlPlaneMinor(): ExportVersion {
  const found = findControlPlane();
  if (typeof found === 'string') throw new Error(found);
  const minor = /^v(\d+\.\d+)\./.exec(found.version)?.[1];
  const version = exportVersions.find((candidate) => candidate === minor);
  if (version === undefined) throw new Error(`export writes for ${exportVersions.join(', ')}, not ${found.version}`);
  return version;
}

/** What a control plane needs for MutatingAdmissionPolicy at this minor (none from 1.36, where it is GA and on). */
export function mutatingPolicyPlaneOptions(version: ExportVersion): Pick<ControlPlaneOptions, 'featureGates' | 'apiserverArgs'> {
  return version === '1.35'
    ? { featureGates: 'MutatingAdmissionPolicy=true', apiserverArgs: ['--runtime-config=admissionregistration.k8s.io/v1beta1=true'] }
    : {};
}

/** `tolerator export`'s settings with no flags (the default plugins) for `version`. */
export function defaultExportSettings(version: ExportVersion): ExportSettings {
  return {
    kubernetesVersion: version,
    enabled: selectPlugins([], []),
    notReadySeconds: defaultTolerationSeconds,
    unreachableSeconds: defaultTolerationSeconds,
    podTolerationRestriction: {},
    podNodeSelectorConfigured: false,
    tenancyPolicies: [],
    gates: defaultGatesAtVersion({ major: 1, minor: Number(version.split('.')[1]) }),
  };
}

/** The exported documents for `settings`; a refusal fails the test that asked. */
export function exportedDocuments(settings: ExportSettings): Manifest[] {
  const result = exportPolicies(settings);
  if (result.documents === undefined) throw new Error(`export refused: ${JSON.stringify(result.refusals)}`);
  return result.documents.map((document) => structuredClone(document) as unknown as Manifest);
}

/**
 * Creates the documents, then waits until the mutating policy acts: a dry-run pod in `namespace`
 * must come back with the not-ready toleration (a new policy takes effect after the API server's
 * policy informer has seen it and compiled it). Each exported tenancy ValidatingAdmissionPolicy
 * takes effect on its own, later or sooner: waiting for the mutating one alone let the first
 * tenancy cases of a suite reach a server that did not refuse yet (seen at load average 7: a
 * tenant's wildcard toleration admitted), so each is waited for too (waitForTenancyPolicies).
 * `namespace` must be reviewed and not infrastructure.
 */
export async function installExportedPolicies(kubeconfig: string, documents: readonly Manifest[], namespace: string): Promise<void> {
  const { objects } = clientsFor(kubeconfig);
  for (const document of documents) await objects.create(asKubernetesObject(document));
  await waitForPolicies(objects, namespace);
  await waitForTenancyPolicies(objects, documents, namespace);
}

export async function waitForPolicies(objects: k8s.KubernetesObjectApi, namespace: string): Promise<void> {
  const probe: Manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'export-probe', namespace },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const answer = plain(await createObject(objects, probe, 'All')) as { spec?: { tolerations?: { key?: string }[] } };
    if ((answer.spec?.tolerations ?? []).some((toleration) => toleration.key === 'node.kubernetes.io/not-ready')) return;
    await sleep(250);
  }
  throw new Error('the exported MutatingAdmissionPolicy did not take effect within 60 s');
}
