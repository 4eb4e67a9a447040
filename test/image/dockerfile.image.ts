// `npm run test:image` (suffix .image.ts: never swept into test:unit): the Dockerfile, unchanged, built here (tools/image/build.sh: the base image
// made from Debian's packages and the npm registry's Node.js, since no container registry can be
// pulled from), then run with podman as deploy/ runs it: its own non-root user, a read-only root
// file system, no capabilities, the serving certificate and the policies mounted read-only. It
// answers --version, /readyz and one review. Minutes, not seconds (docs/testing.md), so it is not
// part of `npm test`. Without podman, buildah or debootstrap it skips and says so;
// TOLERATOR_REQUIRE_IMAGE=1 makes that a failure.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../cluster/control-plane.js';
import { createCertificateAuthority, signCertificate } from '../cluster/pki.js';
import { pollUntil } from '../cluster/poll.js';
import { ROOT } from '../support/rendered-manifests.js';
import { callServe } from '../support/serve-process.js';

const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const image = `localhost/tolerator:${version}`;
const missing = ['podman', 'buildah', 'debootstrap', 'runc'].filter(
  (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).status !== 0,
);
const unavailable = missing.length === 0 ? false : `needs ${missing.join(', ')} (Debian packages; see tools/image/build.sh)`;
if (unavailable !== false && process.env.TOLERATOR_REQUIRE_IMAGE === '1') throw new Error(`TOLERATOR_REQUIRE_IMAGE=1: ${unavailable}`);
/** tools/image/build.sh says why: this machine's cgroups and capabilities. */
const containerFlags = (process.env.TOLERATOR_CONTAINER_FLAGS ?? '--runtime runc --ulimit nofile=1024:1024 --ulimit nproc=4096:4096').split(
  ' ',
);

function podman(args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const [runtime, runtimeName, ...runFlags] = containerFlags;
  // --runtime is podman's global flag; the rest belong to `run`.
  const global = runtime === '--runtime' && runtimeName !== undefined ? [runtime, runtimeName] : [];
  const rest = global.length === 0 ? containerFlags : runFlags;
  const [command, ...tail] = args;
  const withFlags = command === 'run' ? [command, ...rest, ...tail] : args;
  return spawnSync('podman', [...global, ...withFlags], { encoding: 'utf8', timeout: 120_000 });
}

describe('the image, built from the Dockerfile and run as deploy/ runs it', { skip: unavailable }, () => {
  let dir = '';
  const name = `tolerator-image-test-${process.pid}`;

  before(() => {
    const build = spawnSync('tools/image/build.sh', [], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    assert.equal(build.status, 0, `${build.stdout.slice(-4000)}${build.stderr.slice(-4000)}`);
    dir = mkdtempSync(join(tmpdir(), 'tolerator-image-'));
  });
  after(() => {
    podman(['rm', '--force', name]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers --version with the package version and the revision it was built from', () => {
    const run = podman(['run', '--rm', image, '--version']);
    assert.equal(run.status, 0, run.stderr);
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
    assert.match(run.stdout, new RegExp(`^tolerator ${version.replaceAll('.', '\\.')}\\ncommit: ${head}\\n`));
  });

  it('serves as the Deployment runs it (user 65532, read-only root, no capabilities, certificate and policies mounted): /readyz, then one review', async () => {
    const ca = await createCertificateAuthority('tolerator-image-test-ca');
    const leaf = await signCertificate(ca, { commonName: 'tolerator', ips: ['127.0.0.1'], usage: 'server' });
    const tls = join(dir, 'tls');
    spawnSync('mkdir', ['-p', tls]);
    writeFileSync(join(tls, 'tls.crt'), leaf.cert);
    writeFileSync(join(tls, 'tls.key'), leaf.key);
    // The Secret volume's files are readable by the pod's user: 0644 here, as its defaultMode.
    chmodSync(join(tls, 'tls.key'), 0o644);
    chmodSync(dir, 0o755);
    const port = await freePort();
    const started = podman([
      'run',
      '--detach',
      '--name',
      name,
      '--network',
      'host',
      '--read-only',
      '--tmpfs',
      '/tmp',
      '--cap-drop',
      'ALL',
      '--security-opt',
      'no-new-privileges',
      '--volume',
      `${tls}:/etc/tolerator/tls:ro`,
      '--volume',
      `${join(ROOT, 'policies')}:/etc/tolerator/policies:ro`,
      image,
      'serve',
      '--port',
      String(port),
      '--bind-address',
      '127.0.0.1',
      '--tls-cert-file',
      '/etc/tolerator/tls/tls.crt',
      '--tls-private-key-file',
      '/etc/tolerator/tls/tls.key',
      '--policies',
      '/etc/tolerator/policies',
      '--shutdown-delay',
      '0',
    ]);
    assert.equal(started.status, 0, started.stderr);
    const user = podman(['inspect', '--format', '{{.Config.User}}', name]);
    assert.equal(user.stdout.trim(), '65532:65532', "the image's own user");

    const agent = new Agent({ ca: ca.cert });
    try {
      const ready = await pollUntil(
        '/readyz',
        async () => {
          const answer = await callServe(agent, port, '/readyz').catch(() => undefined);
          return answer?.status === 200 ? answer : undefined;
        },
        { timeoutMs: 60_000, describe: () => podman(['logs', name]).stdout.slice(-2000) },
      );
      assert.equal(ready.status, 200);
      const review = readFileSync(join(ROOT, 'examples', 'review-burstable-pod.json'), 'utf8');
      const answer = await callServe(agent, port, '/mutate', review);
      assert.equal(answer.status, 200, answer.body);
      const response = (JSON.parse(answer.body) as { response: { allowed: boolean; patch: string } }).response;
      assert.equal(response.allowed, true);
      const patch = JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as { value: { key: string }[] }[];
      assert.deepEqual(
        patch[0]?.value.map((toleration) => toleration.key),
        ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable', 'node.kubernetes.io/memory-pressure'],
      );
    } finally {
      agent.destroy();
    }
  });
});
