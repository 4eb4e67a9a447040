/**
 * The `--admission-config FILE` parser: the cluster-level default and whitelist of
 * PodTolerationRestriction, read from the same file kube-apiserver's `--admission-control-config-file`
 * takes, or from the plugin's bare `Configuration`. Pure: the file's text comes in, and any file it
 * points to is read through the `readFile` function passed in.
 *
 * Upstream:
 * - staging/src/k8s.io/apiserver/pkg/admission/config.go (ReadAdmissionConfiguration, ConfigFor,
 *   GetAdmissionPluginConfigurationFor): the first plugin entry with the plugin's name wins; an
 *   embedded `configuration` is used instead of `path`; a relative `path` is joined to the
 *   directory of the configuration file; no entry means no configuration.
 * - staging/src/k8s.io/apiserver/pkg/apis/apiserver/{v1,v1alpha1}/register.go: AdmissionConfiguration
 *   is registered as `apiserver.config.k8s.io/v1` and `apiserver.k8s.io/v1alpha1` (there is no
 *   `apiserver.config.k8s.io/v1alpha1` AdmissionConfiguration).
 * - plugin/pkg/admission/podtolerationrestriction/apis/podtolerationrestriction/{v1,v1alpha1}:
 *   `Configuration` in `podtolerationrestriction.admission.k8s.io/v1` and `/v1alpha1`, fields
 *   `default` and `whitelist` (config_test.go parses both versions).
 * - .../validation/validation.go: both lists go through ValidateTolerations under the path
 *   `podtolerationrestriction.default` / `podtolerationrestriction.whitelist`, and any error fails
 *   the load (`invalid config: …`).
 */
import { dirname, isAbsolute, join } from 'node:path';
import { parseDocument } from 'yaml';
import type { Toleration } from '../api/types.js';
import { decodeParsedTolerations, goFieldType } from '../tolerations/go-json-tolerations.js';
import { validateTolerations } from '../tolerations/validate-tolerations.js';
import { aggregateMessage } from '../validation/field-errors.js';
import type { PodTolerationRestrictionConfig } from './pod-toleration-restriction.js';

/** A configuration file that cannot be used; the message names the file, the field and the problem. */
export class AdmissionConfigError extends Error {
  override readonly name = 'AdmissionConfigError';
}

export interface AdmissionConfigOptions {
  /** Whether `Gt`/`Lt` tolerations are valid (the TaintTolerationComparisonOperators gate). */
  readonly allowComparisonOperators: boolean;
  /** Reads a file a plugin entry's `path` points to; may throw. */
  readonly readFile: (path: string) => string;
}

const pluginName = 'PodTolerationRestriction';
const admissionConfigurationVersions = ['apiserver.config.k8s.io/v1', 'apiserver.k8s.io/v1alpha1'];
const pluginConfigurationVersions = ['podtolerationrestriction.admission.k8s.io/v1', 'podtolerationrestriction.admission.k8s.io/v1alpha1'];

/**
 * Parses the content of the file at `filePath` (YAML or JSON) into the PodTolerationRestriction
 * cluster configuration. An AdmissionConfiguration with no PodTolerationRestriction entry, or an
 * entry with neither `configuration` nor `path`, gives `{}` (upstream: no configuration).
 */
export function parseAdmissionConfig(content: string, filePath: string, options: AdmissionConfigOptions): PodTolerationRestrictionConfig {
  const root = parseYamlMapping(content, filePath);
  const { apiVersion, kind } = typeMeta(root, filePath, '');
  if (admissionConfigurationVersions.includes(apiVersion) && kind === 'AdmissionConfiguration') {
    return fromAdmissionConfiguration(root, filePath, options);
  }
  if (pluginConfigurationVersions.includes(apiVersion) && kind === 'Configuration') {
    return fromPluginConfiguration(root, filePath, '', options);
  }
  throw new AdmissionConfigError(
    `${filePath}: unknown apiVersion/kind ${JSON.stringify(`${apiVersion}, Kind=${kind}`)}: want kind AdmissionConfiguration ` +
      `(${admissionConfigurationVersions.join(' or ')}) or kind Configuration (${pluginConfigurationVersions.join(' or ')})`,
  );
}

function fromAdmissionConfiguration(
  root: Record<string, unknown>,
  filePath: string,
  options: AdmissionConfigOptions,
): PodTolerationRestrictionConfig {
  const plugins = root.plugins ?? [];
  if (!Array.isArray(plugins)) {
    throw new AdmissionConfigError(`${filePath}: plugins: must be a list, got ${describe(plugins)}`);
  }
  for (const [index, entry] of (plugins as unknown[]).entries()) {
    const field = `plugins[${index}]`;
    if (!isMapping(entry)) {
      throw new AdmissionConfigError(`${filePath}: ${field}: must be a mapping, got ${describe(entry)}`);
    }
    const name = optionalString(entry, 'name', filePath, field);
    const path = optionalString(entry, 'path', filePath, field);
    const embedded = entry.configuration ?? null;
    if (embedded !== null && !isMapping(embedded)) {
      throw new AdmissionConfigError(`${filePath}: ${field}.configuration: must be a mapping, got ${describe(embedded)}`);
    }
    if (name !== pluginName) {
      continue;
    }
    // The first entry with the plugin's name decides, as in upstream's ConfigFor.
    if (embedded !== null) {
      const at = `${field}.configuration`;
      const { apiVersion, kind } = typeMeta(embedded, filePath, at);
      requirePluginConfiguration(apiVersion, kind, filePath, at);
      return fromPluginConfiguration(embedded, filePath, `${at}.`, options);
    }
    if (path !== '') {
      // Upstream makes a relative path absolute against the configuration file's directory.
      const resolved = isAbsolute(path) ? path : join(dirname(filePath), path);
      let nested: string;
      try {
        nested = options.readFile(resolved);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new AdmissionConfigError(`${filePath}: ${field}.path: cannot read ${JSON.stringify(resolved)}: ${reason}`);
      }
      const nestedRoot = parseYamlMapping(nested, resolved);
      const { apiVersion, kind } = typeMeta(nestedRoot, resolved, '');
      requirePluginConfiguration(apiVersion, kind, resolved, '');
      return fromPluginConfiguration(nestedRoot, resolved, '', options);
    }
    return {};
  }
  return {};
}

function requirePluginConfiguration(apiVersion: string, kind: string, filePath: string, at: string): void {
  if (!pluginConfigurationVersions.includes(apiVersion) || kind !== 'Configuration') {
    throw new AdmissionConfigError(
      `${filePath}: ${at === '' ? '' : `${at}: `}unknown apiVersion/kind ${JSON.stringify(`${apiVersion}, Kind=${kind}`)}: ` +
        `want kind Configuration (${pluginConfigurationVersions.join(' or ')})`,
    );
  }
}

function fromPluginConfiguration(
  configuration: Record<string, unknown>,
  filePath: string,
  prefix: string,
  options: AdmissionConfigOptions,
): PodTolerationRestrictionConfig {
  const result: { default?: Toleration[]; whitelist?: Toleration[] } = {};
  for (const list of ['default', 'whitelist'] as const) {
    const decoded = decodeParsedTolerations(configuration[list] ?? null);
    if (decoded.mismatch !== undefined) {
      const { index, field, got } = decoded.mismatch;
      const at = `${prefix}${list}${index === undefined ? '' : `[${index}]`}${field === undefined ? '' : `.${field}`}`;
      const want = index === undefined ? 'a list of tolerations' : field === undefined ? 'a toleration mapping' : goFieldType(field, 'v1');
      throw new AdmissionConfigError(`${filePath}: ${at}: must be ${want}, got ${got}`);
    }
    if (decoded.tolerations !== null) {
      result[list] = decoded.tolerations;
    }
  }
  const errors = [
    ...validateTolerations(result.default ?? [], 'podtolerationrestriction.default', options),
    ...validateTolerations(result.whitelist ?? [], 'podtolerationrestriction.whitelist', options),
  ];
  if (errors.length > 0) {
    const at = prefix === '' ? '' : `${prefix.slice(0, -1)}: `;
    throw new AdmissionConfigError(`${filePath}: ${at}invalid config: ${aggregateMessage(errors)}`);
  }
  return result;
}

/**
 * YAML 1.1, as sigs.k8s.io/yaml (go-yaml v2) reads it: `yes`/`no`/`on`/`off` are booleans there,
 * so `value: yes` is a type error upstream and here, not the string "yes". JSON is YAML too.
 */
function parseYamlMapping(content: string, filePath: string): Record<string, unknown> {
  const document = parseDocument(content, { version: '1.1', uniqueKeys: false });
  const problem = document.errors[0];
  if (problem !== undefined) {
    throw new AdmissionConfigError(`${filePath}: not valid YAML or JSON: ${problem.message}`);
  }
  const root: unknown = document.toJS();
  if (!isMapping(root)) {
    throw new AdmissionConfigError(`${filePath}: must be a mapping with apiVersion and kind, got ${describe(root)}`);
  }
  return root;
}

function typeMeta(object: Record<string, unknown>, filePath: string, at: string): { apiVersion: string; kind: string } {
  const prefix = at === '' ? '' : `${at}.`;
  const apiVersion = optionalString(object, 'apiVersion', filePath, at);
  const kind = optionalString(object, 'kind', filePath, at);
  if (apiVersion === '') {
    throw new AdmissionConfigError(`${filePath}: ${prefix}apiVersion: missing`);
  }
  if (kind === '') {
    throw new AdmissionConfigError(`${filePath}: ${prefix}kind: missing`);
  }
  return { apiVersion, kind };
}

function optionalString(object: Record<string, unknown>, key: string, filePath: string, at: string): string {
  const value = object[key] ?? '';
  if (typeof value !== 'string') {
    throw new AdmissionConfigError(`${filePath}: ${at === '' ? '' : `${at}.`}${key}: must be a string, got ${describe(value)}`);
  }
  return value;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) {
    return 'null';
  }
  if (Array.isArray(value)) {
    return 'a list';
  }
  if (typeof value === 'object') {
    return 'a mapping';
  }
  return `${typeof value} ${JSON.stringify(value)}`;
}
