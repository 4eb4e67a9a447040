/**
 * Where tolerator finds its cluster (docs/architecture.md#where-the-cluster-comes-from):
 * `--kubeconfig FILE`, else the in-cluster service account, else no cluster at all (the caller
 * then uses `--cluster-state FILE`, or nothing).
 */
import { KubeConfig } from '@kubernetes/client-node';

export interface KubeConfigOptions {
  /** `--kubeconfig FILE`; takes precedence over the in-cluster configuration. */
  kubeconfigPath?: string | undefined;
  /** The process environment (passed in, not read from a global, so tests can pick a branch). */
  env: Readonly<Record<string, string | undefined>>;
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
  if (options.kubeconfigPath !== undefined && options.kubeconfigPath !== '') {
    const kc = new KubeConfig();
    kc.loadFromFile(options.kubeconfigPath);
    if (kc.getCurrentCluster() === null) {
      throw new Error(`${options.kubeconfigPath}: the current context names no cluster`);
    }
    return kc;
  }
  const serviceHost = options.env.KUBERNETES_SERVICE_HOST;
  if (serviceHost !== undefined && serviceHost !== '') {
    const kc = new KubeConfig();
    kc.loadFromCluster();
    return kc;
  }
  return undefined;
}
