/**
 * docs/install.md, "Before you apply": `kubectl apply -k deploy/` on a cluster without
 * cert-manager reports the missing kinds, applies the webhook configurations all the same, and
 * the next `kubectl run` is refused by the validating webhook that nothing can answer; the one
 * command the page gives, run as written, gets the user out: `kubectl run` succeeds.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { pollUntil } from '../cluster/poll.js';

const skip = skipWithoutControlPlane();

/** The first `sh` block of docs/install.md's "Before you apply" section: the way out. */
function wayOut(): string {
  const page = readFileSync(join(REPO_ROOT, 'docs', 'install.md'), 'utf8');
  const section = page.slice(page.indexOf('### Before you apply'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1]?.trim();
  assert.ok(block !== undefined && !block.includes('\n'), 'one command');
  return block;
}

describe('kubectl apply -k deploy/ without cert-manager', { skip }, () => {
  let dir = '';
  let plane: ControlPlane | undefined;
  const kubectl = (command: string): { status: number | null; stdout: string; stderr: string } =>
    spawnSync('sh', ['-c', command], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, KUBECONFIG: plane!.kubeconfig, PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}` },
    });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-no-cert-manager-'));
    // The controller manager makes the Service's EndpointSlices (with no ready endpoint), as on a real cluster.
    plane = await startControlPlane({ dir, temporaryDir: true, controllerManager: true });
  });
  after(async () => {
    await plane?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('kubectl apply -k deploy/ without cert-manager blocks kubectl run, and the command docs/install.md gives gets the user out in one step', async () => {
    const applied = kubectl('kubectl apply -k deploy/');
    assert.notEqual(applied.status, 0);
    assert.match(applied.stderr, /no matches for kind "Certificate" in version "cert-manager\.io\/v1"/);
    assert.match(applied.stdout, /validatingwebhookconfiguration\.admissionregistration\.k8s\.io\/tolerator created/);
    // The API server's webhook informer takes a moment to see the new configuration.
    const refused = await pollUntil('kubectl run to be refused by the webhook', () => {
      const run = kubectl('kubectl run probe --image=nginx --dry-run=server');
      return Promise.resolve(run.status !== 0 ? run.stderr : undefined);
    });
    assert.match(refused, /failed calling webhook "validate\.tolerator\.dev"/);

    const out = kubectl(wayOut());
    assert.equal(out.status, 0, out.stderr);
    const admitted = await pollUntil('kubectl run to be admitted', () => {
      const run = kubectl('kubectl run web --image=nginx');
      return Promise.resolve(run.status === 0 ? run.stdout : undefined);
    });
    assert.equal(admitted, 'pod/web created\n');
  });
});
