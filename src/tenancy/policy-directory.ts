/**
 * Edge code: reads TenancyPolicies from a directory, and reloads them when it changes.
 *
 * Which files are policy files, the one rule (docs/tenancy.md): every regular
 * file directly in the directory (a symlink counts as what it points to) whose name ends in
 * `.yaml`, `.yml` or `.json`. JSON is YAML, so one parser serves both, and gives line numbers for
 * messages; each file may hold several documents. Everything else is ignored: other names (a
 * README.md, notes.txt), subdirectories, which are not read (the shipped `policies/` keeps its
 * ValidatingAdmissionPolicy twins in `vap/` and its test cases in `tests/`; a ConfigMap mount's
 * `..data` is one), and empty documents (comments only, a trailing `---`), which say nothing.
 *
 * Every document of a policy file must be a TenancyPolicy of a known apiVersion, else the load
 * fails naming the file, the document's index and why. A document of another kind was once
 * skipped without a word, so a misspelt `kind: TenancyPolcy` ran the webhook with tenancy off
 * while `serve` logged `policies: []`: a policy directory must never silently mean nothing.
 */
import { readdirSync, readFileSync, statSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, isNode, parseAllDocuments } from 'yaml';
import { parseTenancyPolicy, tenancyPolicyApiVersion, tenancyPolicyKind } from './policy.js';
import type { PolicyLoadError, TenancyPolicy } from './policy.js';
import { createPolicySet } from './policy-set.js';
import type { PolicySet, PolicySource } from './policy-set.js';

const policyFile = /\.(ya?ml|json)$/;

export interface PolicyDirectoryLoad {
  /** Every policy that loaded; a policy with errors is left out. */
  readonly set: PolicySet;
  /** Empty when the whole directory loaded cleanly. */
  readonly errors: readonly PolicyLoadError[];
}

/** Reads the directory once. Files are taken in name order, so "the first of two duplicates" is stable. */
export function loadPolicyDirectory(dir: string): PolicyDirectoryLoad {
  let names: string[];
  try {
    names = readdirSync(dir)
      .filter((name) => policyFile.test(name))
      .sort();
  } catch (error) {
    return { set: { policies: [] }, errors: [{ file: dir, message: `cannot read the policy directory: ${describe(error)}` }] };
  }
  const sources: PolicySource[] = [];
  const errors: PolicyLoadError[] = [];
  for (const name of names) {
    const file = join(dir, name);
    try {
      // statSync follows symlinks: a ConfigMap mount's `x.yaml` is a link into `..data/`.
      if (!statSync(file).isFile()) {
        continue;
      }
      sources.push({ file, text: readFileSync(file, 'utf8') });
    } catch (error) {
      errors.push({ file, message: `cannot read: ${describe(error)}` });
    }
  }
  const loaded = policySetFromSources(sources);
  return { set: loaded.set, errors: [...errors, ...loaded.errors] };
}

/**
 * The set the files' texts make, in the order given; pure. The set keeps the texts (`sources`),
 * so that a review worker (src/server) can build the very same set in its own thread.
 */
export function policySetFromSources(sources: readonly PolicySource[]): PolicyDirectoryLoad {
  const policies: TenancyPolicy[] = [];
  const errors: PolicyLoadError[] = [];
  for (const { file, text } of sources) {
    const loaded = parsePolicyFile(file, text);
    policies.push(...loaded.policies);
    errors.push(...loaded.errors);
  }
  const built = createPolicySet(policies);
  return { set: { ...built.set, sources }, errors: [...errors, ...built.errors] };
}

/** Parses one file's text; exported so tests and `tolerator test` can load policies without a directory. */
export function parsePolicyFile(file: string, text: string): { policies: TenancyPolicy[]; errors: PolicyLoadError[] } {
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter, prettyErrors: false });
  const policies: TenancyPolicy[] = [];
  const errors: PolicyLoadError[] = [];
  const lineAt = (offset: number): number => lineCounter.linePos(offset).line;
  const list = Array.isArray(documents) ? documents : [documents];
  for (const [index, document] of list.entries()) {
    if (document.errors.length > 0) {
      for (const error of document.errors) {
        errors.push({ file, line: lineAt(error.pos[0]), message: `not valid YAML: ${error.message}` });
      }
      continue;
    }
    const value: unknown = document.toJS();
    if (value === null || value === undefined) {
      // An empty document (comments only, a trailing `---`): nothing to load, nothing misspelt.
      continue;
    }
    const refusal = notATenancyPolicy(value);
    if (refusal !== undefined) {
      const start = isNode(document.contents) ? document.contents.range[0] : 0;
      errors.push({ file, line: lineAt(start), document: index + 1, message: refusal });
      continue;
    }
    const parsed = parseTenancyPolicy(value, {
      file,
      lineOf: (path) => {
        // The offending key itself when the value is missing, else the value.
        const node = document.getIn(path, true);
        if (isNode(node) && node.range) {
          return lineAt(node.range[0]);
        }
        const parent = document.getIn(path.slice(0, -1), true);
        return isNode(parent) && parent.range ? lineAt(parent.range[0]) : undefined;
      },
    });
    if (parsed.policy !== undefined) {
      policies.push(parsed.policy);
    }
    errors.push(...parsed.errors);
  }
  return { policies, errors };
}

/**
 * Why a non-empty document is not a TenancyPolicy, or undefined when its kind says it is one (its
 * apiVersion and fields are parseTenancyPolicy's to check, with every error it finds).
 */
function notATenancyPolicy(value: unknown): string | undefined {
  const expected = `every document of a policy file must be apiVersion ${tenancyPolicyApiVersion}, kind ${tenancyPolicyKind}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `not a TenancyPolicy: a ${Array.isArray(value) ? 'list' : typeof value} where a mapping with apiVersion and kind belongs (${expected})`;
  }
  const { kind, apiVersion } = value as { kind?: unknown; apiVersion?: unknown };
  if (kind === tenancyPolicyKind) {
    return undefined;
  }
  // The values are the file author's, of any length: quoted, and cut at a length no kind reaches.
  const what =
    kind === undefined
      ? 'it has no kind'
      : `kind ${clipped(kind)}${apiVersion === undefined ? '' : ` of apiVersion ${clipped(apiVersion)}`}`;
  return `not a TenancyPolicy: ${what} (${expected}; keep other manifests out of the directory, or in a subdirectory, which is not read)`;
}

/**
 * 63 characters: more than any kind or apiVersion in use needs (`MutatingWebhookConfiguration`
 * is 28, `admissionregistration.k8s.io/v1` 31), few enough to keep the message one line.
 */
const shownValueLength = 63;

function clipped(value: unknown): string {
  const text = JSON.stringify(value);
  return text.length > shownValueLength ? `${text.slice(0, shownValueLength)}…` : text;
}

export interface PolicyDirectoryWatch {
  /** A reload loaded cleanly: the new set replaces the old. */
  readonly onLoad: (set: PolicySet) => void;
  /** A reload failed: the caller keeps its last good set. */
  readonly onError: (errors: readonly PolicyLoadError[]) => void;
  /**
   * Quiet time after the last change before reloading. A ConfigMap update is a burst of events
   * (new timestamped directory, `..data_tmp` link, rename over `..data`, old directory removed)
   * within a few milliseconds; an editor save is a write then a rename. 250 ms collapses either
   * into one reload while staying far below the kubelet's own ConfigMap sync delay (~1 min).
   */
  readonly debounceMs?: number;
}

const defaultDebounceMs = 250;

/**
 * Reloads on change and calls back; the initial load is the caller's (`loadPolicyDirectory`).
 * A reload with any error calls `onError` and not `onLoad`, so a broken edit never replaces a
 * working set.
 *
 * The directory is watched, not the files: in a ConfigMap mount each `x.yaml` is a symlink to
 * `..data/x.yaml`, and `..data` is itself a symlink that the kubelet swaps atomically (a rename)
 * to a new timestamped directory. A watch on a file follows the link to the old inode, which is
 * deleted, and never fires again; the rename of `..data` is an event on the directory.
 */
export function watchPolicyDirectory(dir: string, options: PolicyDirectoryWatch): { close(): void } {
  const debounceMs = options.debounceMs ?? defaultDebounceMs;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const reload = (): void => {
    timer = undefined;
    if (closed) {
      return;
    }
    const loaded = loadPolicyDirectory(dir);
    if (loaded.errors.length > 0) {
      options.onError(loaded.errors);
    } else {
      options.onLoad(loaded.set);
    }
  };
  const schedule = (): void => {
    if (timer !== undefined) {
      clearTimeout(timer);
    }
    timer = setTimeout(reload, debounceMs);
  };
  const watcher: FSWatcher = watch(dir, { persistent: false }, schedule);
  watcher.on('error', (error) => {
    options.onError([{ file: dir, message: `watching the policy directory failed: ${describe(error)}` }]);
  });
  return {
    close() {
      closed = true;
      if (timer !== undefined) {
        clearTimeout(timer);
      }
      watcher.close();
    },
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
