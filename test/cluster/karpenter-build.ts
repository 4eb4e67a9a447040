/**
 * `npm run karpenter:build`: builds Karpenter's KWOK cloud provider (`sigs.k8s.io/karpenter/kwok`,
 * the main package Karpenter's own end-to-end suites run) from the Go module tools/karpenter/,
 * whose go.mod pins sigs.k8s.io/karpenter and names that package as a tool, into its gitignored
 * bin/ folder, with the CustomResourceDefinitions it needs copied beside it from the same module
 * version (bin/crds/), so a launcher never installs CRDs of another release.
 *
 * Idempotent as `npm run control-plane:build` is (test/cluster/build.ts): bin/BUILD holds a digest
 * of go.mod, go.sum, the Go version and the flags; when it matches and everything is there,
 * nothing is built. Exit codes: 0 built or up to date, 2 usage, no Go or a Go older than the
 * module's `go` line, 1 the build failed.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { goToolchainProblem, installedGoVersion } from './build.js';
import { KARPENTER_BINARY, KARPENTER_CRD_FOLDERS, KARPENTER_MODULE, karpenterBinDir, karpenterModuleDir } from './karpenter-binaries.js';

/** The version of sigs.k8s.io/karpenter the module pins. */
export function karpenterPin(goMod: string): string {
  const version = /^\s*(?:require\s+)?sigs\.k8s\.io\/karpenter\s+(v\d+\.\d+\.\d+)\b/m.exec(goMod)?.[1];
  if (version === undefined) throw new Error('go.mod pins no sigs.k8s.io/karpenter');
  return version;
}

/**
 * -X stamps operator.Version, which Karpenter logs at start and reports in its
 * karpenter_build_info metric (pkg/operator/operator.go), as its release images are stamped;
 * -s -w drop the symbol table and DWARF, as for the control plane.
 */
export function karpenterLdflags(version: string): string {
  return `-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=${version}`;
}

/**
 * GOTOOLCHAIN=local: never download the toolchain go.mod names (build.ts says why); -mod=readonly:
 * go.sum is the pin; CGO off: a static binary that needs no C toolchain.
 */
const goEnv = (): NodeJS.ProcessEnv => ({ ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' });

function goJson(args: readonly string[], cwd: string): Record<string, unknown> | undefined {
  const result = spawnSync('go', args, { cwd, encoding: 'utf8', env: goEnv() });
  if (result.status !== 0) {
    process.stderr.write(result.stderr);
    return undefined;
  }
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

function goOutput(args: readonly string[], cwd: string): string | undefined {
  const result = spawnSync('go', args, { cwd, encoding: 'utf8', env: goEnv() });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

function sizeOf(dir: string): string {
  const du = spawnSync('du', ['-sh', dir], { encoding: 'utf8' });
  return du.status === 0 ? (du.stdout.split('\t')[0] ?? '?') : '?';
}

/** Copies every `*.yaml` of the module's CRD folders into `target`; the number copied. */
function copyCrds(moduleSource: string, target: string): number {
  mkdirSync(target, { recursive: true });
  let copied = 0;
  for (const folder of KARPENTER_CRD_FOLDERS) {
    for (const file of readdirSync(join(moduleSource, folder)).filter((name) => name.endsWith('.yaml'))) {
      copyFileSync(join(moduleSource, folder, file), join(target, file));
      // The module cache's files are read-only; the copy need not be.
      chmodSync(join(target, file), 0o644);
      copied++;
    }
  }
  return copied;
}

/** Why this machine's Go cannot build tools/karpenter, or undefined when it can. */
export function goCannotBuildKarpenter(): string | undefined {
  const moduleDir = karpenterModuleDir();
  return goToolchainProblem(readFileSync(join(moduleDir, 'go.mod'), 'utf8'), installedGoVersion(moduleDir));
}

export function main(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: { force: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help === true) {
    console.log('usage: npm run karpenter:build -- [--force]');
    return 0;
  }
  const moduleDir = karpenterModuleDir();
  const goMod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const goVersion = installedGoVersion(moduleDir);
  const goProblem = goToolchainProblem(goMod, goVersion);
  if (goProblem !== undefined || goVersion === undefined) {
    console.error(`karpenter:build: ${goProblem ?? 'Go is not installed'}`);
    return 2;
  }
  const version = karpenterPin(goMod);
  const ldflags = karpenterLdflags(version);
  const binDir = karpenterBinDir();
  const digest = createHash('sha256')
    .update([goMod, readFileSync(join(moduleDir, 'go.sum'), 'utf8'), goVersion, ldflags, KARPENTER_CRD_FOLDERS.join(',')].join('\0'))
    .digest('hex');
  const buildFile = join(binDir, 'BUILD');
  const complete = [KARPENTER_BINARY, 'VERSION', 'crds'].every((name) => existsSync(join(binDir, name)));
  if (!values.force && complete && existsSync(buildFile) && readFileSync(buildFile, 'utf8').trim() === digest) {
    console.log(`karpenter:build: Karpenter ${version} (KWOK provider) already built in tools/karpenter/bin (0 s)`);
    return 0;
  }

  const started = Date.now();
  const partial = `${binDir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  console.log(
    `karpenter:build: building Karpenter ${version} (KWOK provider) with ${goVersion} (cold, about 4 minutes of CPU: 2-3 minutes on two idle cores)`,
  );
  const build = spawnSync(
    'go',
    ['build', '-trimpath', '-ldflags', ldflags, '-o', join(partial, KARPENTER_BINARY), `${KARPENTER_MODULE}/kwok`],
    { cwd: moduleDir, env: goEnv(), stdio: 'inherit' },
  );
  if (build.error !== undefined) throw build.error;
  if (build.status !== 0) {
    console.error(`karpenter:build: go build failed after ${Math.round((Date.now() - started) / 1000)} s`);
    return 1;
  }
  // The module as go.sum pins it, from the module cache (downloaded by the build above).
  const source = goJson(['mod', 'download', '-json', `${KARPENTER_MODULE}@${version}`], moduleDir)?.Dir;
  if (typeof source !== 'string') {
    console.error(`karpenter:build: go mod download found no source for ${KARPENTER_MODULE}@${version}`);
    return 1;
  }
  const crds = copyCrds(source, join(partial, 'crds'));
  writeFileSync(join(partial, 'VERSION'), `${version}\n`);
  writeFileSync(join(partial, 'BUILD'), `${digest}\n`);
  rmSync(binDir, { recursive: true, force: true });
  renameSync(partial, binDir);
  const seconds = Math.round((Date.now() - started) / 1000);
  const modCache = goOutput(['env', 'GOMODCACHE'], moduleDir);
  const buildCache = goOutput(['env', 'GOCACHE'], moduleDir);
  console.log(
    `karpenter:build: built Karpenter ${version} (KWOK provider, ${crds} CRDs) in ${seconds} s` +
      ` (bin ${sizeOf(binDir)}, module cache ${modCache === undefined ? '?' : sizeOf(modCache)}, build cache ${buildCache === undefined ? '?' : sizeOf(buildCache)})`,
  );
  return 0;
}

if (process.argv[1] === import.meta.filename) {
  process.exitCode = main(process.argv.slice(2));
}
