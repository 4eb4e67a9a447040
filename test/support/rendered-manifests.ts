/**
 * Manifests as the cluster would receive them: `kubectl kustomize DIR` and `helm template` output
 * parsed into objects, for the tests that compare the two installs.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { findKubectl } from '../cluster/binaries.js';

export const ROOT = join(import.meta.dirname, '..', '..');
export const CHART_DIR = join(ROOT, 'deploy', 'helm', 'tolerator');
export const MONITORING_DIR = join(CHART_DIR, 'files', 'monitoring');

export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly [field: string]: unknown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseManifests(text: string, where: string): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const document of parseAllDocuments(text)) {
    assert.deepEqual(document.errors, [], `${where}: YAML errors`);
    const value: unknown = document.toJS();
    if (value === null || value === undefined) continue;
    assert.ok(isRecord(value) && typeof value.kind === 'string' && typeof value.apiVersion === 'string', `${where}: not an object`);
    assert.ok(isRecord(value.metadata) && typeof value.metadata.name === 'string', `${where}: ${value.kind} without a name`);
    objects.push(value as unknown as KubeObject);
  }
  return objects;
}

const kubectl = findKubectl();

/** Whether there is a kubectl (for `kubectl kustomize`): on the PATH, or the control plane's build. */
export function hasKubectl(): boolean {
  return kubectl !== undefined;
}

/** Which kubectl the manifest tests run, for the line they print. */
export function kubectlSource(): string {
  return kubectl === undefined ? 'no kubectl' : `kubectl from the ${kubectl.source} (${kubectl.path})`;
}

export function renderKustomize(dir: string): KubeObject[] {
  if (kubectl === undefined) throw new Error('no kubectl: put one on the PATH or npm run control-plane:build');
  return parseManifests(execFileSync(kubectl.path, ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }), dir);
}

/** The one object of a kind and name; fails listing what there is otherwise. */
export function find(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
  assert.equal(found.length, 1, `one ${kind}/${name} among ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found[0]!;
}

/** A field by path (`spec.template.spec`), undefined when any step is missing. */
export function at(value: unknown, path: string): unknown {
  let current = value;
  for (const step of path.split('.')) {
    current = isRecord(current) ? current[step] : Array.isArray(current) && /^\d+$/.test(step) ? current[Number(step)] : undefined;
  }
  return current;
}
