// One version for everything a release ships: the npm package, its lock file, the Helm chart's
// version and appVersion (the image tag it pulls by default), the image tag deploy/ pins, and the
// newest CHANGELOG entry. A release changes them together, or this fails.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { formatVersion, readBuildInfo } from '../../src/build-info.js';
import { ROOT } from '../support/rendered-manifests.js';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const packageVersion = (JSON.parse(read('package.json')) as { version: string }).version;

describe('the release version', () => {
  it('is a semantic version', () => {
    assert.match(packageVersion, /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$/);
  });

  it('is the lock file’s', () => {
    const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
    assert.equal(lock.version, packageVersion);
    assert.equal(lock.packages['']?.version, packageVersion);
  });

  it('is the chart’s version and appVersion, and the chart pulls that tag by default', () => {
    const chart = parse(read('deploy/helm/tolerator/Chart.yaml')) as { version: string; appVersion: string };
    assert.equal(chart.version, packageVersion);
    assert.equal(chart.appVersion, packageVersion);
    const values = parse(read('deploy/helm/tolerator/values.yaml')) as { image: { tag: string } };
    assert.equal(values.image.tag, '', 'an empty image.tag: the chart’s appVersion');
  });

  it('is the image tag deploy/ pins', () => {
    const kustomization = parse(read('deploy/base/kustomization.yaml')) as { images: { name: string; newTag: string }[] };
    assert.deepEqual(
      kustomization.images.map((image) => image.newTag),
      [packageVersion],
    );
  });

  it('is the newest CHANGELOG entry', () => {
    const first = /^## \[([^\]]+)\]/m.exec(read('CHANGELOG.md'));
    assert.equal(first?.[1], packageVersion);
  });

  it('is what --version prints, with the revision from TOLERATOR_REVISION', () => {
    const info = readBuildInfo({ TOLERATOR_REVISION: 'f00dcafe' }, process.version);
    assert.deepEqual(info, { version: packageVersion, revision: 'f00dcafe', nodeVersion: process.version });
    assert.equal(formatVersion(info), `tolerator ${packageVersion} (revision f00dcafe, Node.js ${process.version})\n`);
    assert.equal(readBuildInfo({}, process.version).revision, 'unknown');
  });
});

describe('the LICENSE', () => {
  it('is the Apache License 2.0 that package.json names, in full', () => {
    assert.equal((JSON.parse(read('package.json')) as { license: string }).license, 'Apache-2.0');
    const text = read('LICENSE');
    assert.match(text, /Apache License\s+Version 2\.0, January 2004/);
    assert.match(text, /END OF TERMS AND CONDITIONS/);
    assert.match(text, /APPENDIX: How to apply the Apache License to your work\./);
  });
});
