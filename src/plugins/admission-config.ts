/**
 * The `--admission-config FILE` parser: the cluster-level default and whitelist of
 * PodTolerationRestriction and the cluster default node selector and namespace whitelists of
 * PodNodeSelector, read from the same file kube-apiserver's `--admission-control-config-file`
 * takes, or from PodTolerationRestriction's bare `Configuration`, or from PodNodeSelector's legacy
 * bare file. Pure: the file's text comes in, and any file it points to is read through the
 * `readFile` function passed in.
 *
 * Upstream:
 * - staging/src/k8s.io/apiserver/pkg/admission/config.go (ReadAdmissionConfiguration, ConfigFor,
 *   GetAdmissionPluginConfigurationFor): the first plugin entry with the plugin's name wins; an
 *   embedded `configuration` is used instead of `path`; a relative `path` is joined to the
 *   directory of the configuration file; no entry means no configuration.
 * - staging/src/k8s.io/apiserver/pkg/apis/apiserver/{v1,v1alpha1}/register.go: AdmissionConfiguration
 *   is registered as `apiserver.config.k8s.io/v1` and `apiserver.k8s.io/v1alpha1` (there is no
 *   `apiserver.config.k8s.io/v1alpha1` AdmissionConfiguration).
 * - plugin/pkg/admission/podtolerationrestriction/apis/podtolerationrestriction/v1alpha1 and
 *   .../install/install.go: `Configuration` in `podtolerationrestriction.admission.k8s.io/v1alpha1`,
 *   fields `default` and `whitelist`. It is the only version kube-apiserver registers (v1.35.8):
 *   a `v1` package existed for a while and was removed, and kube-apiserver now refuses to start with
 *   a `v1` Configuration (`no kind "Configuration" is registered for version
 *   "podtolerationrestriction.admission.k8s.io/v1"`), so tolerator refuses it too: a file it
 *   accepts must be one the in-tree plugin accepts.
 * - .../validation/validation.go: both lists go through ValidateTolerations under the path
 *   `podtolerationrestriction.default` / `podtolerationrestriction.whitelist`, and any error fails
 *   the load (`invalid config: …`).
 * - plugin/pkg/admission/podnodeselector/admission.go (readConfig): PodNodeSelector's configuration
 *   is unversioned, `podNodeSelectorPluginConfig:` holding a map of strings, `clusterDefaultNodeSelector`
 *   and one whitelist per namespace name, each a selector (`env=prod,tier=web`). An embedded
 *   `configuration` needs no apiVersion or kind. The field is matched as Go's encoding/json
 *   matches a struct field: exactly or case-insensitively with Unicode simple folding, every
 *   matching key decoding into the one map, in order, a null resetting it.
 * - the same config.go, ReadAdmissionConfiguration: a file that is no registered kind but has a
 *   top-level `podNodeSelectorPluginConfig` key is read as PodNodeSelector's configuration (the
 *   legacy form, from before AdmissionConfiguration).
 *
 * Stricter than upstream, so a mistake is found when tolerator starts and not in some request:
 * upstream's readConfig ignores a file it cannot decode (and drops or converts a value that is not
 * a string, depending on the file's form), and parses each selector only when a pod needs it,
 * failing that pod with a 500. Here a value that is not a string (or null, which is "") and a
 * selector that does not parse are errors naming the file and the key.
 */
import { dirname, isAbsolute, join } from 'node:path';
import { parseDocument } from 'yaml';
import type { Toleration } from '../api/types.js';
import { decodeParsedTolerations, goFieldType } from '../tolerations/go-json-tolerations.js';
import { validateTolerations } from '../tolerations/validate-tolerations.js';
import { aggregateMessage } from '../validation/field-errors.js';
import type { PodTolerationRestrictionConfig } from './pod-toleration-restriction.js';
import {
  clusterDefaultNodeSelectorKey,
  emptyPodNodeSelectorConfig,
  parseSelectorLabels,
  type LabelSet,
  type PodNodeSelectorConfig,
} from '../scheduling/namespace-node-selector.js';

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

const admissionConfigurationVersions = ['apiserver.config.k8s.io/v1', 'apiserver.k8s.io/v1alpha1'];
const pluginConfigurationVersions = ['podtolerationrestriction.admission.k8s.io/v1alpha1'];
/** The top-level key of PodNodeSelector's configuration, and of its legacy bare file. */
const podNodeSelectorConfigKey = 'podNodeSelectorPluginConfig';

/** What `--admission-config` configures: each plugin's cluster-level settings. */
export interface AdmissionPluginConfigs {
  readonly podTolerationRestriction: PodTolerationRestrictionConfig;
  readonly podNodeSelector: PodNodeSelectorConfig;
}

/**
 * Parses the content of the file at `filePath` (YAML or JSON) into the plugins' cluster
 * configuration. A plugin without an entry in an AdmissionConfiguration, or whose entry has
 * neither `configuration` nor `path`, has no configuration (upstream too): `{}` for
 * PodTolerationRestriction, no default and no whitelists for PodNodeSelector.
 */
export function parseAdmissionConfig(content: string, filePath: string, options: AdmissionConfigOptions): AdmissionPluginConfigs {
  const root = parseYamlMapping(content, filePath);
  const looseType = (key: string): string => (typeof root[key] === 'string' ? root[key] : '');
  const isAdmissionConfiguration =
    admissionConfigurationVersions.includes(looseType('apiVersion')) && looseType('kind') === 'AdmissionConfiguration';
  if (!isAdmissionConfiguration && Object.hasOwn(root, podNodeSelectorConfigKey)) {
    // The legacy form: upstream gives the whole file to PodNodeSelector (and ImagePolicyWebhook).
    return { podTolerationRestriction: {}, podNodeSelector: fromPodNodeSelectorConfiguration(root, filePath, '') };
  }
  const { apiVersion, kind } = typeMeta(root, filePath, '');
  if (isAdmissionConfiguration) {
    return fromAdmissionConfiguration(root, filePath, options);
  }
  if (pluginConfigurationVersions.includes(apiVersion) && kind === 'Configuration') {
    return { podTolerationRestriction: fromPluginConfiguration(root, filePath, '', options), podNodeSelector: emptyPodNodeSelectorConfig };
  }
  throw new AdmissionConfigError(
    `${filePath}: unknown apiVersion/kind ${JSON.stringify(`${apiVersion}, Kind=${kind}`)}: want kind AdmissionConfiguration ` +
      `(${admissionConfigurationVersions.join(' or ')}), kind Configuration (${pluginConfigurationVersions.join(' or ')}) ` +
      `or PodNodeSelector's ${podNodeSelectorConfigKey}`,
  );
}

/** A plugin's configuration as found: the mapping, the file it is in, and its field there ('' for a whole file). */
interface FoundConfiguration {
  readonly configuration: Record<string, unknown>;
  readonly file: string;
  readonly at: string;
}

function fromAdmissionConfiguration(
  root: Record<string, unknown>,
  filePath: string,
  options: AdmissionConfigOptions,
): AdmissionPluginConfigs {
  const plugins = root.plugins ?? [];
  if (!Array.isArray(plugins)) {
    throw new AdmissionConfigError(`${filePath}: plugins: must be a list, got ${describe(plugins)}`);
  }
  let podTolerationRestriction: PodTolerationRestrictionConfig = {};
  const tolerations = pluginConfiguration(plugins as unknown[], 'PodTolerationRestriction', filePath, options, false);
  if (tolerations !== undefined) {
    const { configuration, file, at } = tolerations;
    const { apiVersion, kind } = typeMeta(configuration, file, at);
    requirePluginConfiguration(apiVersion, kind, file, at);
    podTolerationRestriction = fromPluginConfiguration(configuration, file, at === '' ? '' : `${at}.`, options);
  }
  let podNodeSelector = emptyPodNodeSelectorConfig;
  const selectors = pluginConfiguration(plugins as unknown[], 'PodNodeSelector', filePath, options, true);
  if (selectors !== undefined) {
    podNodeSelector = fromPodNodeSelectorConfiguration(selectors.configuration, selectors.file, selectors.at);
  }
  return { podTolerationRestriction, podNodeSelector };
}

/**
 * The configuration of the first entry named `name` (upstream's ConfigFor): its embedded
 * `configuration`, else the file at its `path`, relative to the configuration file's directory;
 * undefined when there is no such entry or it has neither. `emptyFileAllowed`: a `path` to an
 * empty file is no configuration (PodNodeSelector's readConfig reads nothing from it) rather
 * than an error.
 */
function pluginConfiguration(
  plugins: readonly unknown[],
  name: string,
  filePath: string,
  options: AdmissionConfigOptions,
  emptyFileAllowed: boolean,
): FoundConfiguration | undefined {
  for (const [index, entry] of plugins.entries()) {
    const field = `plugins[${index}]`;
    if (!isMapping(entry)) {
      throw new AdmissionConfigError(`${filePath}: ${field}: must be a mapping, got ${describe(entry)}`);
    }
    const entryName = optionalString(entry, 'name', filePath, field);
    const path = optionalString(entry, 'path', filePath, field);
    const embedded = entry.configuration ?? null;
    if (embedded !== null && !isMapping(embedded)) {
      throw new AdmissionConfigError(`${filePath}: ${field}.configuration: must be a mapping, got ${describe(embedded)}`);
    }
    if (entryName !== name) {
      continue;
    }
    // The first entry with the plugin's name decides, as in upstream's ConfigFor.
    if (embedded !== null) {
      return { configuration: embedded, file: filePath, at: `${field}.configuration` };
    }
    if (path === '') {
      return undefined;
    }
    // Upstream makes a relative path absolute against the configuration file's directory.
    const resolved = isAbsolute(path) ? path : join(dirname(filePath), path);
    let nested: string;
    try {
      nested = options.readFile(resolved);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new AdmissionConfigError(`${filePath}: ${field}.path: cannot read ${JSON.stringify(resolved)}: ${reason}`);
    }
    if (emptyFileAllowed && nested.trim() === '') {
      return undefined;
    }
    return { configuration: parseYamlMapping(nested, resolved), file: resolved, at: '' };
  }
  return undefined;
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
      // The YAML parser has already rounded an integer beyond 2^53 - 1 to a double: a default
      // holding one would be added to pods as another number (or one beyond int64, which the API
      // server fails to decode), so it is refused here, at start (the differential suite found it).
      const inexact = decoded.tolerations.findIndex(
        (toleration) => typeof toleration.tolerationSeconds === 'number' && !Number.isSafeInteger(toleration.tolerationSeconds),
      );
      if (list === 'default' && inexact >= 0) {
        throw new AdmissionConfigError(
          `${filePath}: ${prefix}${list}[${inexact}].tolerationSeconds: beyond ${Number.MAX_SAFE_INTEGER} (2^53 - 1), which cannot be added to a pod exactly`,
        );
      }
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
 * PodNodeSelector's `pluginConfig` struct: every key that Go's encoding/json matches to its field
 * `PodNodeSelectorPluginConfig` decodes into the one map[string]string, in document order (a later
 * entry overwrites an earlier one, a null resets the map); other keys are ignored. Each value is
 * then parsed as upstream parses it for every request (labels.ConvertSelectorToLabelsMap).
 */
function fromPodNodeSelectorConfiguration(configuration: Record<string, unknown>, filePath: string, at: string): PodNodeSelectorConfig {
  const prefix = at === '' ? '' : `${at}.`;
  const selectors = new Map<string, { readonly text: string; readonly field: string }>();
  for (const [key, value] of Object.entries(configuration)) {
    if (!matchesGoFieldName(key, podNodeSelectorConfigKey)) {
      continue;
    }
    if (value === null) {
      selectors.clear();
      continue;
    }
    if (!isMapping(value)) {
      throw new AdmissionConfigError(`${filePath}: ${prefix}${key}: must be a mapping of strings, got ${describe(value)}`);
    }
    for (const [name, selector] of Object.entries(value)) {
      const field = `${prefix}${key}.${name}`;
      // A null string is "" for encoding/json (unmarshalling null into a string does nothing).
      if (selector !== null && typeof selector !== 'string') {
        throw new AdmissionConfigError(
          `${filePath}: ${field}: must be a string (a label selector such as "env=prod"), got ${describe(selector)}`,
        );
      }
      selectors.delete(name);
      selectors.set(name, { text: selector ?? '', field });
    }
  }
  let clusterDefault: LabelSet = new Map();
  const whitelists = new Map<string, LabelSet>();
  for (const [name, { text, field }] of selectors) {
    const parsed = parseSelectorLabels(text);
    if (parsed.error !== undefined) {
      throw new AdmissionConfigError(`${filePath}: ${field}: ${parsed.error}`);
    }
    if (name === clusterDefaultNodeSelectorKey) {
      clusterDefault = parsed.labels;
    } else {
      whitelists.set(name, parsed.labels);
    }
  }
  return { clusterDefault, whitelists };
}

/**
 * Whether encoding/json decodes the JSON key `key` into the struct field named `fieldName` (ASCII
 * letters only): an exact match, or equal under Unicode simple case folding, where besides the
 * ASCII cases only U+017F (long s) folds to s and U+212A (Kelvin sign) to k.
 */
function matchesGoFieldName(key: string, fieldName: string): boolean {
  if (key === fieldName) {
    return true;
  }
  const want = fieldName.toLowerCase();
  // Every character that folds to an ASCII letter is one UTF-16 unit, so the lengths must agree.
  if (key.length !== want.length) {
    return false;
  }
  for (let i = 0; i < key.length; i++) {
    const char = key.charAt(i);
    const folded = char === '\u017f' ? 's' : char === '\u212a' ? 'k' : char < '\u0080' ? char.toLowerCase() : char;
    if (folded !== want.charAt(i)) {
      return false;
    }
  }
  return true;
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
