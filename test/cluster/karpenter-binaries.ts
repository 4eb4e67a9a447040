/**
 * Where Karpenter's KWOK provider is: the binary and CRDs `npm run karpenter:build` put in
 * tools/karpenter/bin/ (gitignored), checked against the VERSION file the build writes, or the
 * folder TOLERATOR_KARPENTER_BIN names. As for the control plane (binaries.ts),
 * TOLERATOR_REQUIRE_CONTROL_PLANE=1 turns "not built" into a failure.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, REQUIRE_CONTROL_PLANE } from './binaries.js';

export const KARPENTER_MODULE = 'sigs.k8s.io/karpenter';
export const KARPENTER_BINARY = 'karpenter-kwok';

/**
 * The module's folders of CustomResourceDefinitions the KWOK provider needs, as Karpenter's own
 * Makefile installs them (`kubectl apply -f kwok/charts/crds`: NodePool, NodeClaim, NodeOverlay,
 * CapacityBuffer, with the KWOK build's extra rule that keeps NodePools off the
 * karpenter.kwok.sh label domain) and its KWOKNodeClass (kwok/apis/crds).
 */
export const KARPENTER_CRD_FOLDERS = ['kwok/charts/crds', 'kwok/apis/crds'] as const;

export function karpenterModuleDir(): string {
  return join(REPO_ROOT, 'tools', 'karpenter');
}

export function karpenterBinDir(): string {
  return join(REPO_ROOT, 'tools', 'karpenter', 'bin');
}

export interface KarpenterBuild {
  readonly dir: string;
  /** The sigs.k8s.io/karpenter version built, e.g. v1.15.0. */
  readonly version: string;
  readonly binary: string;
  /** The CRD files, sorted. */
  readonly crds: readonly string[];
}

/** The build, or why it cannot be used (one line). */
export function findKarpenter(): KarpenterBuild | string {
  const dir = process.env.TOLERATOR_KARPENTER_BIN ?? karpenterBinDir();
  const versionFile = join(dir, 'VERSION');
  if (!existsSync(versionFile)) return 'Karpenter (KWOK provider) is not built (npm run karpenter:build)';
  const binary = join(dir, KARPENTER_BINARY);
  const crdDir = join(dir, 'crds');
  if (!existsSync(binary) || !existsSync(crdDir)) return `${dir} lacks ${KARPENTER_BINARY} or crds/: rebuild with npm run karpenter:build`;
  const crds = readdirSync(crdDir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => join(crdDir, file));
  return { dir, version: readFileSync(versionFile, 'utf8').trim(), binary, crds };
}

/** The `skip` option of a suite that needs Karpenter: false when it is built, else the reason (a failure with TOLERATOR_REQUIRE_CONTROL_PLANE=1). */
export function skipWithoutKarpenter(): string | false {
  const found = findKarpenter();
  if (typeof found !== 'string') return false;
  if (REQUIRE_CONTROL_PLANE) throw new Error(`TOLERATOR_REQUIRE_CONTROL_PLANE=1 but ${found}`);
  return `${found}: skipped (TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure)`;
}
