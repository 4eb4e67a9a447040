/**
 * Edge code: reads TenancyPolicies from a directory, and reloads them when it changes.
 *
 * Every `*.yaml`, `*.yml` and `*.json` file is read (JSON is YAML, so one parser serves both, and
 * gives line numbers for messages); each may hold several documents. Only `kind: TenancyPolicy`
 * documents are taken: the directory also holds ValidatingAdmissionPolicy twins and the like,
 * which are skipped silently.
 */
import { readdirSync, readFileSync, statSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';
import { LineCounter, isNode, parseAllDocuments } from 'yaml';
import { parseTenancyPolicy, tenancyPolicyKind } from './policy.js';
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
  for (const document of list) {
    if (document.errors.length > 0) {
      for (const error of document.errors) {
        errors.push({ file, line: lineAt(error.pos[0]), message: `not valid YAML: ${error.message}` });
      }
      continue;
    }
    const value: unknown = document.toJS();
    if (value === null || typeof value !== 'object' || (value as { kind?: unknown }).kind !== tenancyPolicyKind) {
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
