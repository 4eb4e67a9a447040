import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { loadKubeConfig } from '../../src/kube/kube-config.js';

const kubeconfigPath = fileURLToPath(new URL('./fixtures/kubeconfig.yaml', import.meta.url));

/**
 * client-node's loadFromCluster reads KUBERNETES_SERVICE_HOST/PORT from process.env itself, so
 * the in-cluster case sets them there for its duration and restores them after.
 */
function withProcessEnv<T>(values: Record<string, string>, run: () => T): T {
  const saved = Object.fromEntries(Object.keys(values).map((key) => [key, process.env[key]]));
  Object.assign(process.env, values);
  try {
    return run();
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) Reflect.deleteProperty(process.env, key);
      else process.env[key] = value;
    }
  }
}

describe('loadKubeConfig', () => {
  it('loads --kubeconfig FILE, even inside a cluster', () => {
    const kc = loadKubeConfig({ kubeconfigPath, env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' } });

    assert.equal(kc?.getCurrentCluster()?.server, 'https://203.0.113.10:6443');
    assert.equal(kc.getCurrentUser()?.token, 'not-a-real-token');
  });

  it('uses the in-cluster service account when KUBERNETES_SERVICE_HOST is set', () => {
    const inCluster = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const kc = withProcessEnv(inCluster, () => loadKubeConfig({ env: inCluster }));

    assert.equal(kc?.getCurrentCluster()?.server, 'https://10.96.0.1:443');
    assert.equal(kc.getCurrentCluster()?.caFile, '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt');
  });

  it('answers undefined with neither a kubeconfig nor a cluster environment', () => {
    assert.equal(loadKubeConfig({ env: {} }), undefined);
    assert.equal(loadKubeConfig({ kubeconfigPath: '', env: { KUBERNETES_SERVICE_HOST: '' } }), undefined);
  });

  it('fails when the kubeconfig file cannot be read', () => {
    const missing = fileURLToPath(new URL('./fixtures/no-such-kubeconfig.yaml', import.meta.url));
    assert.throws(() => loadKubeConfig({ kubeconfigPath: missing, env: {} }), /ENOENT/);
  });
});
