/**
 * Builders shared by the tenancy and DedicatedNodes tests. Each call returns a fresh object, so a
 * test can never see another test's changes.
 */
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import type { JsonObject, Namespace, Node, Taint } from '../../src/api/types.js';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';
import type { TenancyPolicy } from '../../src/tenancy/policy.js';

/** The spec of the label-driven example, as plain data to override field by field. */
export function labelPolicySpec(): Record<string, unknown> {
  return {
    group: "namespaceObject.metadata.?labels['dedicated'].orValue('')",
    taint: { key: 'dedicated', effect: 'NoSchedule' },
    nodeLabel: 'dedicated',
    exempt: "object.metadata.?labels['tolerator.dev/exempt'].orValue('') == 'true'",
    infrastructure: "namespaceObject.metadata.?labels['tolerator.dev/node-infrastructure'].orValue('') == 'true'",
    enforcement: 'Deny',
  };
}

export function policyDocument(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'tolerator.dev/v1alpha1', kind: 'TenancyPolicy', metadata: { name }, spec };
}

/** Compiles a policy from data, failing the test with the load errors if it does not load. */
export function compilePolicy(name: string, spec: Record<string, unknown> = labelPolicySpec()): TenancyPolicy {
  const loaded = parsePolicyFile(`${name}.yaml`, stringify(policyDocument(name, spec)));
  const policy = loaded.policies[0];
  if (policy === undefined || loaded.errors.length > 0) {
    throw new Error(loaded.errors.map(formatPolicyLoadError).join('\n'));
  }
  return policy;
}

/** Loads a shipped example from policies/. */
export function examplePolicy(file: string): TenancyPolicy {
  const path = new URL(`../../policies/${file}`, import.meta.url);
  const loaded = parsePolicyFile(file, readFileSync(path, 'utf8'));
  const policy = loaded.policies[0];
  if (policy === undefined || loaded.errors.length > 0) {
    throw new Error(loaded.errors.map(formatPolicyLoadError).join('\n'));
  }
  return policy;
}

export function namespace(name: string, labels: Record<string, string> = {}): Namespace {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

export function node(name: string, labels: Record<string, string> = {}, taints: Taint[] = []): Node {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels }, spec: { taints } };
}

export function pod(spec: JsonObject = {}, metadata: JsonObject = {}): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'app', namespace: 'ns', ...metadata },
    spec: { containers: [{ name: 'app', image: 'app:1' }], ...spec },
  };
}
