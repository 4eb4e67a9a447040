/** `tolerator review` as a person or a script runs it: a file in, the response out, an exit code. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadReviewFixture } from '../support/harness.js';

const root = join(import.meta.dirname, '..', '..');

function tolerator(args: readonly string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(
    process.execPath,
    ['--enable-experimental-regexp-engine-on-excessive-backtracks', '--import', 'tsx', 'src/main.ts', ...args],
    {
      cwd: root,
      input,
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('tolerator review', () => {
  it('runs both webhooks on a file, as the API server calls them, and exits 0 when allowed', () => {
    const result = tolerator(['review', 'examples/review-burstable-pod.json']);
    assert.equal(result.status, 0, result.stderr);
    const response = (JSON.parse(result.stdout) as { response: { uid: string; allowed: boolean; patch: string } }).response;
    assert.equal(response.allowed, true);
    assert.equal(response.uid, loadReviewFixture('burstable-create-no-tolerations').review.request.uid);
    const patch = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as { value: { key: string }[] }[];
    assert.deepEqual(
      patch[0]?.value.map((toleration) => toleration.key),
      ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/memory-pressure'],
    );
  });

  it("reads standard input with -, and exits 1 with the API server's message when denied", () => {
    const result = tolerator(['review', '-', '--webhook', 'validate'], JSON.stringify(loadReviewFixture('gt-gate-off-create').review));
    assert.equal(result.status, 1);
    const response = (JSON.parse(result.stdout) as { response: { status: { message: string } } }).response;
    assert.match(response.status.message, /spec\.tolerations\[2\]\.operator: Unsupported value: "Gt"/);
  });

  it('exits 2 with a clear message for a flag it does not know or a body that is not a review', () => {
    const flag = tolerator(['review', '--webhook', 'both', 'examples/review-burstable-pod.json']);
    assert.equal(flag.status, 2);
    assert.match(flag.stderr, /option '--webhook <mutate\|validate>' argument 'both' is invalid\. Allowed choices are mutate, validate\./);
    const body = tolerator(['review', '-'], '{"kind":"Pod"}');
    assert.equal(body.status, 2);
    assert.match(body.stderr, /kind must be "AdmissionReview", got "Pod"/);
  });

  it('answers as kube-apiserver with PodNodeSelector enabled and configured: the denial, then a merged selector that SchedulingWarnings judges', () => {
    const args = [
      'review',
      '-',
      '--enable-plugins',
      'PodNodeSelector',
      '--admission-config',
      'test/fixtures/config/pod-node-selector-admission.yaml',
      '--cluster-state',
      'test/fixtures/config/pod-node-selector-cluster.yaml',
    ];
    const conflict = tolerator(args, JSON.stringify(loadReviewFixture('node-selector-conflict-create').review));
    assert.equal(conflict.status, 1, conflict.stderr);
    const denied = (JSON.parse(conflict.stdout) as { response: { allowed: boolean; status: unknown } }).response;
    assert.deepEqual(denied.status, {
      metadata: {},
      status: 'Failure',
      message: 'pods is forbidden: pod node label selector conflicts with its namespace node label selector',
      reason: 'Forbidden',
      details: { kind: 'pods' },
      code: 403,
    });

    // In namespace eu (region eu-west, no whitelist) a pod asking for worker-1 (us-east) is admitted
    // with the namespace's label merged in, and then fits no node: the warning judges the merged selector.
    const review = loadReviewFixture('node-selector-merged-create').review;
    review.request.namespace = 'eu';
    const object = review.request.object as { metadata: { namespace: string }; spec: { nodeSelector: Record<string, string> } };
    object.metadata.namespace = 'eu';
    object.spec.nodeSelector = { 'kubernetes.io/hostname': 'worker-1' };
    const admitted = tolerator(args, JSON.stringify(review));
    assert.equal(admitted.status, 0, admitted.stderr);
    const response = (JSON.parse(admitted.stdout) as { response: { patch: string; warnings?: string[] } }).response;
    const patch = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as { op: string; path: string; value: unknown }[];
    assert.deepEqual(
      patch.filter((operation) => operation.path.startsWith('/spec/nodeSelector')),
      [{ op: 'add', path: '/spec/nodeSelector/topology.kubernetes.io~1region', value: 'eu-west' }],
    );
    assert.ok(
      response.warnings?.some((warning) => warning.includes('topology.kubernetes.io/region=eu-west')),
      JSON.stringify(response.warnings),
    );
  });
});

describe('review given YAML points at explain', () => {
  const hint = 'For a Pod or workload manifest, YAML or JSON, run: tolerator explain FILE';

  it('a YAML Pod manifest: exit 2, the parse error, and the explain command', () => {
    const result = tolerator(
      ['review', '-'],
      'apiVersion: v1\nkind: Pod\nmetadata: { name: web }\nspec: { containers: [{ name: c, image: x }] }\n',
    );
    assert.equal(result.status, 2);
    assert.match(result.stderr, /^tolerator review: request body is not valid JSON: /);
    assert.ok(result.stderr.includes(hint), result.stderr);
  });

  it('a Pod as JSON: exit 2, the kind it got, and the explain command', () => {
    const result = tolerator(['review', '-'], '{"apiVersion":"v1","kind":"Pod"}');
    assert.equal(result.status, 2);
    assert.match(result.stderr, /kind must be "AdmissionReview", got "Pod"/);
    assert.ok(result.stderr.includes(hint), result.stderr);
  });

  it('bytes that are neither JSON nor a manifest get the parse error alone', () => {
    const result = tolerator(['review', '-'], 'garbage{');
    assert.equal(result.status, 2);
    assert.ok(!result.stderr.includes('explain'), result.stderr);
  });
});
