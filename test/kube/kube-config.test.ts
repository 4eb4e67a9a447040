import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
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

/** A kubeconfig of one cluster, user and context each, all named `name` unless `context` says otherwise. */
function kubeconfigFile(dir: string, file: string, name: string, server: string, currentContext: string): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      `current-context: "${currentContext}"`,
      `clusters: [{ name: ${name}, cluster: { server: "${server}" } }]`,
      `users: [{ name: ${name}, user: { token: t-${file} } }]`,
      `contexts: [{ name: ${name}, context: { cluster: ${name}, user: ${name} } }]`,
    ].join('\n'),
  );
  return path;
}

describe('loadKubeConfig as kubectl finds the kubeconfig (the CLI client commands: discover)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-kubeconfig-'));
  const first = kubeconfigFile(dir, 'first.yaml', 'dev', 'https://first.example:6443', '');
  const second = kubeconfigFile(dir, 'second.yaml', 'dev', 'https://second.example:6443', 'dev');
  const third = kubeconfigFile(dir, 'third.yaml', 'prod', 'https://third.example:6443', 'prod');
  const home = join(dir, 'home');
  mkdirSync(join(home, '.kube'), { recursive: true });
  kubeconfigFile(join(home, '.kube'), 'config', 'home', 'https://home.example:6443', 'home');

  it('KUBECONFIG is a list: the first file to name a cluster wins, and the first current-context set wins (clientcmd loader.go)', () => {
    const kc = loadKubeConfig({
      env: { KUBECONFIG: [first, join(dir, 'missing.yaml'), '', second, third].join(delimiter) },
      discover: { homeDir: home },
    });
    assert.equal(kc?.getCurrentContext(), 'dev');
    assert.equal(kc.getCurrentCluster()?.server, 'https://first.example:6443');
    assert.deepEqual(
      kc.getContexts().map((context) => context.name),
      ['dev', 'prod'],
    );
  });

  it('--context picks another context of the merged files; an unknown one is an error naming it', () => {
    const env = { KUBECONFIG: [second, third].join(delimiter) };
    assert.equal(
      loadKubeConfig({ env, context: 'prod', discover: { homeDir: home } })?.getCurrentCluster()?.server,
      'https://third.example:6443',
    );
    assert.throws(() => loadKubeConfig({ env, context: 'staging', discover: { homeDir: home } }), /context "staging" does not exist/);
  });

  it('without KUBECONFIG: ~/.kube/config; --kubeconfig before both', () => {
    assert.equal(loadKubeConfig({ env: {}, discover: { homeDir: home } })?.getCurrentCluster()?.server, 'https://home.example:6443');
    assert.equal(
      loadKubeConfig({ kubeconfigPath: third, env: { KUBECONFIG: second }, discover: { homeDir: home } })?.getCurrentCluster()?.server,
      'https://third.example:6443',
    );
  });

  it('serve does not discover: without --kubeconfig it reads neither KUBECONFIG nor ~/.kube/config', () => {
    assert.equal(loadKubeConfig({ env: { KUBECONFIG: second } }), undefined);
  });
});
