// `npm run release` end to end: each artifact is produced, the sums verify, the chart archive
// installs what the chart directory renders, the SBOM lists production dependencies only, and the
// single executable answers --version and runs a command as `npm run tolerator` does. About 75 s
// on two busy cores, so it is `npm run test:release`, not part of `npm test` (docs/testing.md).
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../support/rendered-manifests.js';

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
});
