/**
 * Where tolerator finds its cluster (docs/architecture.md#where-the-cluster-comes-from):
 * `--kubeconfig FILE`, else (for the CLI's client commands, as kubectl) the `KUBECONFIG` list or
 * `~/.kube/config`, else the in-cluster service account, else no cluster at all (the caller then
 * uses `--cluster-state FILE`, or nothing); `--context` picks a context of the kubeconfig.
 */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { KubeConfig, type Cluster, type Context, type User } from '@kubernetes/client-node';

export interface KubeConfigOptions {
  /** `--kubeconfig FILE`; takes precedence over the in-cluster configuration. */
  kubeconfigPath?: string | undefined;
  /** `--context NAME`: the kubeconfig's context to use instead of its current-context. */
  context?: string | undefined;
  /** The process environment (passed in, not read from a global, so tests can pick a branch). */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Find the kubeconfig as kubectl does when no `--kubeconfig` is given: `KUBECONFIG` (a list),
   * else `~/.kube/config` under `homeDir`, before the in-cluster service account. The CLI's client
   * commands do; `serve` does not (a server must not pick up its operator's kubeconfig by chance).
   */
  discover?: { readonly homeDir: string | undefined } | undefined;
}

/**
 * The KubeConfig to watch the cluster with, or undefined when there is no cluster to talk to.
 *
 * In-cluster is detected the way client-go's `rest.InClusterConfig` does: the kubelet sets
 * `KUBERNETES_SERVICE_HOST` (and `_PORT`) in every container. client-node's `loadFromCluster`
 * reads those two variables from `process.env` itself, so `env` decides the branch and the
 * server address comes from the real environment; in production they are the same object.
 * client-node re-reads the service account token file when its copy is over 60 s old
 * (file_auth.js, as client-go does), so the kubelet's rotation of bound tokens (refreshed at 80%
 * of a lifetime of at least 10 minutes) needs nothing from us.
 *
 * Throws (from client-node) when the kubeconfig file is missing or malformed: a flag naming a
 * file that cannot be read is a startup error, not a reason to run without a cluster.
 */
export function loadKubeConfig(options: KubeConfigOptions): KubeConfig | undefined {
  const files =
    options.kubeconfigPath !== undefined && options.kubeconfigPath !== ''
      ? [options.kubeconfigPath]
      : options.discover === undefined
        ? []
        : discoveredFiles(options.env, options.discover.homeDir);
  if (files.length > 0) {
    const kc = files.length === 1 ? fromFile(files[0] ?? '') : mergedAsKubectl(files);
    if (options.context !== undefined) {
      if (kc.getContextObject(options.context) === null)
        throw new Error(`context "${options.context}" does not exist in ${files.join(', ')}`);
      kc.setCurrentContext(options.context);
    }
    if (kc.getCurrentCluster() === null) {
      throw new Error(`${files.join(', ')}: the current context names no cluster`);
    }
    return kc;
  }
  if (options.context !== undefined) throw new Error(`--context ${options.context} needs a kubeconfig, and none was found`);
  const serviceHost = options.env.KUBERNETES_SERVICE_HOST;
  if (serviceHost !== undefined && serviceHost !== '') {
    const kc = new KubeConfig();
    kc.loadFromCluster();
    return kc;
  }
  return undefined;
}

/**
 * client-go's default loading rules (k8s.io/client-go/tools/clientcmd/loader.go,
 * NewDefaultClientConfigLoadingRules): the files `KUBECONFIG` lists (empty entries ignored, missing
 * files skipped), else `~/.kube/config` if it exists.
 */
function discoveredFiles(env: Readonly<Record<string, string | undefined>>, homeDir: string | undefined): string[] {
  const list = env.KUBECONFIG ?? '';
  if (list !== '') return list.split(delimiter).filter((file) => file !== '' && existsSync(file));
  const home = homeDir === undefined || homeDir === '' ? undefined : join(homeDir, '.kube', 'config');
  return home !== undefined && existsSync(home) ? [home] : [];
}

function fromFile(file: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/**
 * Several kubeconfig files merged as kubectl merges them (loader.go, ClientConfigLoadingRules.Load):
 * the first file to name a cluster, user or context wins and later ones never change it, and the
 * first current-context set wins. client-node's own merge (loadFromDefault) lets the last file's
 * current-context win and throws on a name two files share, so it is not used.
 */
function mergedAsKubectl(files: readonly string[]): KubeConfig {
  const clusters = new Map<string, Cluster>();
  const users = new Map<string, User>();
  const contexts = new Map<string, Context>();
  let currentContext = '';
  for (const file of files) {
    const kc = fromFile(file);
    for (const cluster of kc.getClusters()) if (!clusters.has(cluster.name)) clusters.set(cluster.name, cluster);
    for (const user of kc.getUsers()) if (!users.has(user.name)) users.set(user.name, user);
    for (const context of kc.getContexts()) if (!contexts.has(context.name)) contexts.set(context.name, context);
    if (currentContext === '') currentContext = kc.getCurrentContext();
  }
  const merged = new KubeConfig();
  merged.loadFromOptions({
    clusters: [...clusters.values()],
    users: [...users.values()],
    contexts: [...contexts.values()],
    currentContext,
  });
  return merged;
}
