/**
 * `npm run control-plane:build -- --version 1.35`: builds etcd, kube-apiserver, kube-scheduler,
 * kube-controller-manager and kubectl from the Go module tools/controlplane/<minor>/ (its go.mod
 * pins k8s.io/kubernetes and names upstream's own main packages as tools) into its gitignored
 * bin/ folder, with the version stamped as upstream's hack/lib/version.sh stamps it, so that
 * `/version` reports the real release (tolerator reads it to choose feature-gate defaults).
 *
 * Idempotent: bin/BUILD holds a digest of everything the output depends on (go.mod, go.sum, the
 * Go toolchain's version, the flags below); when it matches and every binary is there, nothing
 * is built. The Kubernetes binaries are built in one `go build` so they share one compilation of
 * their common packages. Exit codes: 0 built or up to date, 2 usage, no Go or a Go older than the
 * module's `go` line, 1 the build failed.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CONTROL_PLANE_BINARIES, DEFAULT_MINOR, REPO_ROOT, binDirFor } from './binaries.js';

const KUBERNETES_COMMANDS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'] as const;

/** The etcd server module is itself a main package (server/main.go calls etcdmain.Main). */
const ETCD_PACKAGE = 'go.etcd.io/etcd/server/v3';

export interface ModulePins {
  readonly kubernetes: string;
  readonly etcd: string;
}

/** The versions a control-plane go.mod pins: k8s.io/kubernetes and the etcd server it requires. */
export function modulePins(goMod: string): ModulePins {
  const kubernetes = /^\s*(?:require\s+)?k8s\.io\/kubernetes\s+(v\d+\.\d+\.\d+)\b/m.exec(goMod)?.[1];
  const etcd = /^\s*go\.etcd\.io\/etcd\/server\/v3\s+(v\d+\.\d+\.\d+)\b/m.exec(goMod)?.[1];
  if (kubernetes === undefined || etcd === undefined) throw new Error('go.mod pins no k8s.io/kubernetes or no go.etcd.io/etcd/server/v3');
  return { kubernetes, etcd };
}

/**
 * The -ldflags of upstream's hack/lib/version.sh (kube::version::ldflags): the same values into
 * component-base (what /version and --version report) and client-go (the client's user agent).
 * The build date is fixed so that two builds of one pin are the same bytes. -s -w drop the symbol
 * table and DWARF: the binaries are about a third smaller and nothing here debugs them.
 */
export function versionLdflags(version: string): string {
  const match = /^v(\d+)\.(\d+)\./.exec(version);
  if (match === null) throw new Error(`not a Kubernetes version: ${version}`);
  const [, major, minor] = match;
  const stamps = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
    `-X ${pkg}.gitVersion=${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
    `-X ${pkg}.buildDate=1970-01-01T00:00:00Z`,
  ]);
  return ['-s', '-w', ...stamps].join(' ');
}

/**
 * Why the installed Go cannot build a module whose go.mod says `go X.Y[.Z]`, or undefined when it
 * can. The build runs with GOTOOLCHAIN=local (it never downloads a toolchain), so an older Go only
 * fails with `go.mod requires go >= …`: Debian 12 packages Go 1.19 and Ubuntu 24.04 Go 1.22, so a
 * fresh machine with its distribution's Go is this case, and it is told as plainly as no Go at
 * all. `goVersion` is `go env GOVERSION` (`go1.26.8`, `go1.25rc1`), undefined when there is no Go;
 * a development build (`devel …`) is taken to be new enough.
 */
export function goToolchainProblem(goMod: string, goVersion: string | undefined): string | undefined {
  const required = /^go\s+(\d+)\.(\d+)(?:\.(\d+))?\s*$/m.exec(goMod);
  const need = required === null ? undefined : required.slice(1).map((part: string | undefined) => Number(part ?? 0));
  if (goVersion === undefined) {
    return `Go is not installed (the module needs Go ${need === undefined ? '' : `${need[0]}.${need[1]}`} or later)`;
  }
  const installed = /^go(\d+)\.(\d+)(?:\.(\d+))?/.exec(goVersion);
  if (need === undefined || installed === null) return undefined;
  const have = installed.slice(1).map((part: string | undefined) => Number(part ?? 0));
  for (let i = 0; i < 3; i++) {
    if (have[i]! > need[i]!) return undefined;
    if (have[i]! < need[i]!) return `Go ${goVersion.slice(2)} is installed, and the module needs Go ${need.join('.')} or later`;
  }
  return undefined;
}

/** `go env GOVERSION` in `moduleDir`, or undefined when Go is not installed. */
export function installedGoVersion(moduleDir: string): string | undefined {
  return goOutput(['env', 'GOVERSION'], moduleDir);
}

export function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): number {
  const result = spawnSync(command, args, { cwd, env, stdio: 'inherit' });
  if (result.error !== undefined) throw result.error;
  return result.status ?? 1;
}

/**
 * GOTOOLCHAIN=local here too: in a module whose go.mod names a newer Go, the default (auto) makes
 * an older `go` download that toolchain and answer for it, which the build (local) never runs.
 */
export function goOutput(args: readonly string[], cwd: string): string | undefined {
  const result = spawnSync('go', args, { cwd, encoding: 'utf8', env: { ...process.env, GOTOOLCHAIN: 'local' } });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

export function sizeOf(dir: string): string {
  const du = spawnSync('du', ['-sh', dir], { encoding: 'utf8' });
  return du.status === 0 ? (du.stdout.split('\t')[0] ?? '?') : '?';
}

export function main(argv: readonly string[]): number {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      version: { type: 'string', default: DEFAULT_MINOR },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help === true) {
    console.log('usage: npm run control-plane:build -- [--version 1.35] [--force]');
    return 0;
  }
  const minor = values.version;
  const moduleDir = join(REPO_ROOT, 'tools', 'controlplane', minor);
  if (!existsSync(join(moduleDir, 'go.mod'))) {
    console.error(`control-plane:build: no module for Kubernetes ${minor} (tools/controlplane/${minor}/go.mod)`);
    return 2;
  }
  const goMod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const goVersion = installedGoVersion(moduleDir);
  const goProblem = goToolchainProblem(goMod, goVersion);
  if (goProblem !== undefined || goVersion === undefined) {
    console.error(`control-plane:build: ${goProblem ?? 'Go is not installed'}`);
    return 2;
  }
  const pins = modulePins(goMod);
  const ldflags = versionLdflags(pins.kubernetes);
  const binDir = binDirFor(minor);
  const digest = createHash('sha256')
    .update([goMod, readFileSync(join(moduleDir, 'go.sum'), 'utf8'), goVersion, ldflags].join('\0'))
    .digest('hex');
  const buildFile = join(binDir, 'BUILD');
  const complete = CONTROL_PLANE_BINARIES.every((binary) => existsSync(join(binDir, binary))) && existsSync(join(binDir, 'VERSION'));
  if (!values.force && complete && existsSync(buildFile) && readFileSync(buildFile, 'utf8').trim() === digest) {
    console.log(
      `control-plane:build: Kubernetes ${pins.kubernetes} and etcd ${pins.etcd} already built in tools/controlplane/${minor}/bin (0 s)`,
    );
    return 0;
  }

  const started = Date.now();
  // Into a fresh folder beside bin/, renamed over it when everything is built: an interrupted
  // build never leaves a bin/ that looks complete.
  const partial = `${binDir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  // CGO off: static binaries that need no C toolchain; GOTOOLCHAIN=local: build with the Go that
  // is installed rather than downloading the one go.mod names; -mod=readonly: go.sum is the pin,
  // a build never rewrites it; -trimpath: no path of this machine inside the binaries.
  const env = { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' };
  console.log(
    `control-plane:build: building Kubernetes ${pins.kubernetes} and etcd ${pins.etcd} with ${goVersion} (cold, about 7 minutes of CPU: 4-5 minutes on two idle cores)`,
  );
  const kubernetes = run(
    'go',
    [
      'build',
      '-trimpath',
      '-ldflags',
      ldflags,
      '-o',
      `${partial}/`,
      ...KUBERNETES_COMMANDS.map((command) => `k8s.io/kubernetes/cmd/${command}`),
    ],
    moduleDir,
    env,
  );
  const etcd =
    kubernetes === 0
      ? run('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(partial, 'etcd'), ETCD_PACKAGE], moduleDir, env)
      : 1;
  if (kubernetes !== 0 || etcd !== 0) {
    console.error(`control-plane:build: go build failed after ${Math.round((Date.now() - started) / 1000)} s`);
    return 1;
  }
  writeFileSync(join(partial, 'VERSION'), `${pins.kubernetes}\n`);
  writeFileSync(join(partial, 'BUILD'), `${digest}\n`);
  rmSync(binDir, { recursive: true, force: true });
  renameSync(partial, binDir);
  const seconds = Math.round((Date.now() - started) / 1000);
  const modCache = goOutput(['env', 'GOMODCACHE'], moduleDir);
  const buildCache = goOutput(['env', 'GOCACHE'], moduleDir);
  console.log(
    `control-plane:build: built Kubernetes ${pins.kubernetes} and etcd ${pins.etcd} in ${seconds} s` +
      ` (bin ${sizeOf(binDir)}, module cache ${modCache === undefined ? '?' : sizeOf(modCache)}, build cache ${buildCache === undefined ? '?' : sizeOf(buildCache)})`,
  );
  return 0;
}

if (process.argv[1] === import.meta.filename) {
  process.exitCode = main(process.argv.slice(2));
}
