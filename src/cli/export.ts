/**
 * `tolerator export [--kubernetes-version 1.35|1.36|1.37] [--output-dir DIR]`: the rules `serve`
 * would apply with the same flags, as MutatingAdmissionPolicy and ValidatingAdmissionPolicy
 * manifests (src/export/export-policies.ts decides), as YAML on stdout or one file per object in
 * DIR. A configuration they cannot reproduce exactly is refused: exit 2, one line per plugin or
 * policy with the reason, nothing written.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { defaultGatesAtVersion, type KubernetesVersion } from '../api/feature-gate-history.js';
import { exportPolicies, exportVersions, type ExportVersion, type Manifest } from '../export/export-policies.js';
import { emptyPodNodeSelectorConfig } from '../scheduling/namespace-node-selector.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import { admissionFlags, readAdmissionSettings } from './options.js';
import { loadPolicies } from '../server/tenancy-policies.js';

export const exportFlags = {
  ...admissionFlags,
  'kubernetes-version': {
    kind: 'string',
    placeholder: '1.35|1.36|1.37',
    help: 'the Kubernetes version to write for: 1.35 writes MutatingAdmissionPolicy v1beta1 (beta, off by default), 1.36 and 1.37 v1 (default 1.36)',
  },
  'output-dir': { kind: 'string', placeholder: 'DIR', help: 'write one file per object into DIR instead of YAML on stdout' },
} as const satisfies Record<string, FlagSpec>;

function readVersion(raw: string | undefined): ExportVersion {
  const version = raw ?? '1.36';
  const known = exportVersions.find((candidate) => candidate === version);
  if (known === undefined) {
    throw new UsageError(`--kubernetes-version must be one of ${exportVersions.join(', ')}, got ${JSON.stringify(version)}`);
  }
  return known;
}

/** `1.37` as the major and minor the gate table is keyed by. */
function versionOf(version: ExportVersion): KubernetesVersion {
  const [major = '', minor = ''] = version.split('.');
  return { major: Number(major), minor: Number(minor) };
}

export const exportCommand: CommandDefinition = {
  name: 'export',
  summary:
    'the same rules as MutatingAdmissionPolicy and ValidatingAdmissionPolicy manifests, for running without a webhook (docs/without-a-webhook.md)',
  flags: exportFlags,
  details:
    'A configuration the policies cannot reproduce exactly (PodNodeSelector, cluster toleration lists, a TenancyPolicy whose rules are not namespace labels, more than one TenancyPolicy) is refused with exit code 2 and the reason, and nothing is written.',
  outcomes: { ok: 'the manifests were written' },
  run: (flags, io) =>
    new Promise((resolve) => {
      resolve(runExport(flags, io));
    }),
};

function runExport(flags: ParsedFlags, io: CommandIo): number {
  if (flags.positionals.length > 0) throw new UsageError('export takes no arguments');
  const settings = readAdmissionSettings(flags);
  if (settings.clusterStateFile !== undefined)
    throw new UsageError('export decides from the configuration alone: --cluster-state is not used');
  const kubernetesVersion = readVersion(flags.values.get('kubernetes-version') as string | undefined);
  const policies = settings.policiesDir === undefined ? [] : loadPolicies(settings.policiesDir).policies;
  const result = exportPolicies({
    kubernetesVersion,
    enabled: settings.enabled,
    notReadySeconds: settings.notReadySeconds,
    unreachableSeconds: settings.unreachableSeconds,
    podTolerationRestriction: settings.podTolerationRestriction,
    podNodeSelectorConfigured: settings.podNodeSelector !== emptyPodNodeSelectorConfig,
    tenancyPolicies: policies,
    // The gates of the version the manifests are for (its defaults, as a server of that version
    // runs without --feature-gates), with --feature-gates over them: 1.37's
    // PodLevelResourcesFixKubeletQOSClass changes which pods are BestEffort.
    gates: { ...defaultGatesAtVersion(versionOf(kubernetesVersion)), ...settings.explicitGates },
  });
  if (result.refusals !== undefined) {
    const lines = result.refusals.map((refusal) => `  ${refusal.subject}: ${refusal.reason}`);
    io.stderr(`tolerator export: this configuration cannot be exported without a webhook:\n${lines.join('\n')}\n`);
    return 2;
  }
  const header = [
    `Written by tolerator export --kubernetes-version ${kubernetesVersion} (docs/without-a-webhook.md).`,
    ...result.requirements,
    ...result.notes,
  ];
  const outputDir = flags.values.get('output-dir') as string | undefined;
  if (outputDir === undefined) {
    io.stdout(renderYaml(header, result.documents));
    return 0;
  }
  mkdirSync(outputDir, { recursive: true });
  for (const document of result.documents) {
    const kind = String(document.kind);
    const name = String((document.metadata as { name?: unknown } | undefined)?.name);
    writeFileSync(join(outputDir, `${name}.${kind.toLowerCase()}.yaml`), renderYaml(header, [document]));
  }
  for (const line of result.requirements) io.stderr(`tolerator export: ${line}\n`);
  return 0;
}

/** The documents as one YAML stream, the header as comments; long CEL stays on one line (lineWidth 0), as the API server stores it. */
export function renderYaml(header: readonly string[], documents: readonly Manifest[]): string {
  const comments = header.map((line) => `# ${line}\n`).join('');
  return comments + documents.map((document) => stringify(document, { lineWidth: 0 })).join('---\n');
}
