// `npm run release` end to end: each artifact is produced, the sums verify, the chart archive
// installs what the chart directory renders, the SBOM lists production dependencies only, and the
// single executable answers --version and runs a command as `npm run tolerator` does. About 75 s
// on two busy cores, so it is `npm run test:release`, not part of `npm test` (docs/testing.md).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { parse } from 'yaml';
import { pollUntil } from '../cluster/poll.js';
import { ROOT } from '../support/rendered-manifests.js';
import { callServe } from '../support/serve-process.js';

const OUT = join(ROOT, 'release');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const skip =
  process.platform !== 'linux' || process.arch !== 'x64'
    ? `the single executable is linux-x64, this is ${process.platform}-${process.arch}`
    : false;

describe('npm run release', { skip }, () => {
  before(() => {
    const run = spawnSync('npm', ['run', 'release'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
  });

  it('writes every artifact and a SHA256SUMS that verifies each', () => {
    const sums = readFileSync(join(OUT, 'SHA256SUMS'), 'utf8').trim().split('\n');
    const names = sums.map((line) => line.split('  ')[1]);
    assert.deepEqual(names, ['index.yaml', `tolerator-${version}-linux-x64`, `tolerator-${version}.cdx.json`, `tolerator-${version}.tgz`]);
    for (const line of sums) {
      const [digest, name] = line.split('  ');
      assert.equal(
        createHash('sha256')
          .update(readFileSync(join(OUT, name!)))
          .digest('hex'),
        digest,
        name,
      );
    }
    assert.ok(!existsSync(join(OUT, '.build')), 'no build leftovers');
  });

  it('indexes the packaged chart at this version', () => {
    const index = parse(readFileSync(join(OUT, 'index.yaml'), 'utf8')) as {
      entries: Record<string, { version: string; appVersion: string; urls: string[]; digest: string }[]>;
    };
    const [entry] = index.entries.tolerator ?? [];
    assert.equal(entry?.version, version);
    assert.equal(entry.appVersion, version);
    assert.deepEqual(entry.urls, [`tolerator-${version}.tgz`]);
    assert.equal(
      entry.digest,
      createHash('sha256')
        .update(readFileSync(join(OUT, `tolerator-${version}.tgz`)))
        .digest('hex'),
    );
  });

  it('lists the production dependencies in a CycloneDX SBOM, and no development one', () => {
    const sbom = JSON.parse(readFileSync(join(OUT, `tolerator-${version}.cdx.json`), 'utf8')) as {
      bomFormat: string;
      components: { name: string; version: string }[];
    };
    assert.equal(sbom.bomFormat, 'CycloneDX');
    const dependencies = Object.keys(
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: object }).dependencies,
    );
    const names = new Set(sbom.components.map((component) => component.name));
    for (const name of dependencies) assert.ok(names.has(name), `${name} missing`);
    for (const name of ['typescript', 'eslint', 'esbuild', 'tsx']) assert.ok(!names.has(name), `${name} is a development dependency`);
  });

  it('builds a single executable that answers --version with this version and revision, and reviews as the sources do', () => {
    const executable = join(OUT, `tolerator-${version}-linux-x64`);
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
    const printed = spawnSync(executable, ['--version'], { encoding: 'utf8', env: {} });
    assert.equal(printed.status, 0, printed.stderr);
    assert.match(
      printed.stdout,
      // The program's --version (src/cli/program.ts): the revision baked in by the release.
      new RegExp(`^tolerator ${version.replaceAll('.', '\\.')}\\ncommit: ${head}(-dirty)?\\nnode: v\\d+\\.\\d+\\.\\d+\\n$`),
    );
    const review = join(ROOT, 'examples', 'review-burstable-pod.json');
    const fromExecutable = spawnSync(executable, ['review', review], { encoding: 'utf8' });
    const fromSources = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'review', review], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(fromExecutable.status, 0, fromExecutable.stderr);
    assert.equal(fromExecutable.stdout, fromSources.stdout);
  });

  it("the single executable's serve runs its review workers: a review over 64 KiB is answered, without --review-workers 0", async () => {
    const executable = join(OUT, `tolerator-${version}-linux-x64`);
    const child = spawn(executable, ['serve', '--port', '0', '--bind-address', '127.0.0.1', '--review-workers', '1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const port = await pollUntil('the executable to serve', () => {
        const serving = stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { msg?: string; port?: number })
          .find((entry) => entry.msg === 'tolerator serving');
        return Promise.resolve(serving?.port);
      });
      // A body over the 64 KiB that the main thread decides itself goes to a worker.
      const review = JSON.parse(readFileSync(join(ROOT, 'examples', 'review-burstable-pod.json'), 'utf8')) as {
        request: { object: { metadata: { annotations?: Record<string, string> } } };
      };
      review.request.object.metadata.annotations = { 'example.com/padding': 'x'.repeat(100 * 1024) };
      const agent = new Agent({ rejectUnauthorized: false });
      const answer = await callServe(agent, port, '/mutate', JSON.stringify(review));
      agent.destroy();
      assert.equal(answer.status, 200, `${answer.body}\n${stdout}\n${stderr}`);
      const response = (JSON.parse(answer.body) as { response: { allowed: boolean; patch?: string } }).response;
      assert.equal(response.allowed, true);
      assert.ok(response.patch !== undefined, 'the defaults are added');
      assert.doesNotMatch(`${stdout}${stderr}`, /Cannot find module/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
