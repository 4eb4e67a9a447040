/**
 * `npm run control-plane:build -- --version 1.35`: builds etcd, kube-apiserver, kube-scheduler,
 * kube-controller-manager and kubectl from the Go module tools/controlplane/<minor>/ (its go.mod
 * pins k8s.io/kubernetes and names upstream's own main packages as tools) into its gitignored
 * bin/ folder, with the version stamped as upstream's hack/lib/version.sh stamps it, so that
 * `/version` reports the real release (tolerator reads it to choose feature-gate defaults).
 *
 * Idempotent, with the flags and exit codes of every pinned tool (pinned-build.ts); 2 also for
 * usage and a minor without a module.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CONTROL_PLANE_BINARIES, DEFAULT_MINOR, REPO_ROOT, binDirFor } from './binaries.js';
import { buildPinnedTool, run } from './pinned-build.js';

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
  const pins = modulePins(readFileSync(join(moduleDir, 'go.mod'), 'utf8'));
  const ldflags = versionLdflags(pins.kubernetes);
  return buildPinnedTool(
    {
      script: 'control-plane:build',
      title: `Kubernetes ${pins.kubernetes} and etcd ${pins.etcd}`,
      moduleDir,
      binDir: binDirFor(minor),
      version: pins.kubernetes,
      digestInputs: [ldflags],
      outputs: CONTROL_PLANE_BINARIES,
      coldCost: 'about 7 minutes of CPU: 4-5 minutes on two idle cores',
      // The Kubernetes binaries in one `go build`, so they share one compilation of their common
      // packages; -trimpath: no path of this machine inside the binaries.
      build: (partial) => {
        const commands = KUBERNETES_COMMANDS.map((command) => `k8s.io/kubernetes/cmd/${command}`);
        const kubernetes = run('go', ['build', '-trimpath', '-ldflags', ldflags, '-o', `${partial}/`, ...commands], moduleDir);
        const etcd =
          kubernetes === 0
            ? run('go', ['build', '-trimpath', '-ldflags', '-s -w', '-o', join(partial, 'etcd'), ETCD_PACKAGE], moduleDir)
            : 1;
        return kubernetes === 0 && etcd === 0 ? {} : { error: 'go build failed' };
      },
    },
    values.force,
  );
}

if (process.argv[1] === import.meta.filename) {
  process.exitCode = main(process.argv.slice(2));
}
