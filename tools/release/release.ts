/**
 * `npm run release`: everything a release ships, into release/ (gitignored), from the working
 * tree as it is:
 * - tolerator-VERSION.tgz, the chart (`helm package`), and index.yaml (`helm repo index`), a chart
 *   repository to serve as it is (`--url URL` sets where the index says the chart lives);
 * - tolerator-VERSION-linux-x64, the CLI as one executable: the sources bundled by esbuild into
 *   one CommonJS file (Node.js single executable applications run only that), made into a
 *   preparation blob by `node --experimental-sea-config` and injected into a copy of this
 *   node binary by postject, as the Node.js documentation describes
 *   (https://nodejs.org/docs/latest-v20.x/api/single-executable-applications.html);
 * - tolerator-VERSION.cdx.json, a CycloneDX SBOM of the production dependencies (`npm sbom`);
 * - SHA256SUMS, in the format `sha256sum -c` reads.
 * The container image is not built here: see docs/install.md ("Releases and versions").
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { helmBinary } from '../../test/support/helm-binary.js';

const ROOT = join(import.meta.dirname, '..', '..');
const OUT = join(ROOT, 'release');
const WORK = join(OUT, '.build');

function run(command: string, args: readonly string[], options: { cwd?: string } = {}): string {
  const result = spawnSync(command, args, { cwd: options.cwd ?? ROOT, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal}):\n${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

/** The commit, with `-dirty` when the tree differs from it: a build must not claim a commit it is not. */
function revision(): string {
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  if (head.status !== 0) return process.env.TOLERATOR_REVISION ?? 'unknown';
  const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim() !== '';
  return `${head.stdout.trim()}${dirty ? '-dirty' : ''}`;
}

async function main(argv: readonly string[]): Promise<void> {
  const urlIndex = argv.indexOf('--url');
  const repositoryUrl = urlIndex === -1 ? undefined : argv[urlIndex + 1];
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const rev = revision();
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });

  // The chart and its repository index.
  const helm = helmBinary();
  if (!('path' in helm)) throw new Error(`helm: ${helm.skip}`);
  run(helm.path, ['lint', '--strict', 'deploy/helm/tolerator', '--namespace', 'tolerator-system']);
  run(helm.path, ['package', 'deploy/helm/tolerator', '--destination', OUT]);
  run(helm.path, ['repo', 'index', OUT, ...(repositoryUrl === undefined ? [] : ['--url', repositoryUrl])]);

  // The single executable. Linux x64 only: the node binary copied is this machine's.
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the single executable is built for linux-x64 from this node binary; this is ${process.platform}-${process.arch}`);
  }
  const bundle = join(WORK, 'tolerator.cjs');
  const define = {
    'import.meta.url': '__toleratorFileUrl',
    'import.meta.dirname': '__dirname',
    TOLERATOR_BUILD: JSON.stringify({ version, revision: rev }),
  };
  const banner = { js: 'const __toleratorFileUrl = require("node:url").pathToFileURL(__filename).href;' };
  // The review worker (src/server/review-pool.ts) is an entry of its own: bundled the same way,
  // kept in memory, and carried inside the main bundle as a string its workers evaluate, so
  // `serve` from the executable runs its review workers like the image does.
  const worker = await build({
    entryPoints: [join(ROOT, 'src', 'server', 'review-worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    write: false,
    define,
    banner,
    logOverride: { 'empty-import-meta': 'silent' },
    logLevel: 'warning',
    legalComments: 'none',
  });
  const workerSource = worker.outputFiles[0]?.text;
  if (workerSource === undefined) throw new Error('esbuild wrote no review worker bundle');
  await build({
    entryPoints: [join(ROOT, 'tools', 'release', 'sea-entry.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    outfile: bundle,
    // In CommonJS there is no import.meta: each use becomes the executable's own file URL.
    define: { ...define, TOLERATOR_REVIEW_WORKER_SOURCE: JSON.stringify(workerSource) },
    banner,
    // The one other import.meta use resolves tsx for a .ts worker, which never runs from the bundle.
    logOverride: { 'empty-import-meta': 'silent' },
    logLevel: 'warning',
    legalComments: 'external',
  });
  const blob = join(WORK, 'sea-prep.blob');
  writeFileSync(
    join(WORK, 'sea-config.json'),
    JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false }),
  );
  run(process.execPath, ['--experimental-sea-config', join(WORK, 'sea-config.json')]);
  const executable = join(OUT, `tolerator-${version}-linux-x64`);
  copyFileSync(process.execPath, executable);
  chmodSync(executable, 0o755);
  run(process.execPath, [
    join(ROOT, 'node_modules', 'postject', 'dist', 'cli.js'),
    executable,
    'NODE_SEA_BLOB',
    blob,
    '--sentinel-fuse',
    'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
  ]);

  // The SBOM of what the image and the package run with: production dependencies only.
  const sbom = run('npm', ['sbom', '--omit', 'dev', '--sbom-format', 'cyclonedx', '--sbom-type', 'application']);
  writeFileSync(join(OUT, `tolerator-${version}.cdx.json`), sbom);

  rmSync(WORK, { recursive: true, force: true });
  const artifacts = readdirSync(OUT)
    .filter((name) => statSync(join(OUT, name)).isFile())
    .sort();
  const sums = artifacts
    .map(
      (name) =>
        `${createHash('sha256')
          .update(readFileSync(join(OUT, name)))
          .digest('hex')}  ${name}\n`,
    )
    .join('');
  writeFileSync(join(OUT, 'SHA256SUMS'), sums);
  process.stdout.write(`release/ (${version}, revision ${rev}):\n${sums}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`release: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
