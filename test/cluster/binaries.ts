/**
 * Where the control plane's binaries are: those `npm run control-plane:build` put in
 * tools/controlplane/<minor>/bin/ (gitignored), checked against the VERSION file the build writes,
 * or the folder TOLERATOR_CONTROL_PLANE_BIN names. Found as envtest's BinPathFinder finds them: the
 * variable first, then the project's own folder.
 *
 * TOLERATOR_REQUIRE_CONTROL_PLANE=1 (CI sets it after building) turns every "not built" skip into
 * a failure, so a CI run never passes by skipping the suites that need a real API server.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The Kubernetes minor the suites run against unless TOLERATOR_CONTROL_PLANE_VERSION says another. */
export const DEFAULT_MINOR = '1.35';

export const REQUIRE_CONTROL_PLANE = process.env.TOLERATOR_REQUIRE_CONTROL_PLANE === '1';

export const CONTROL_PLANE_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'] as const;
export type ControlPlaneBinary = (typeof CONTROL_PLANE_BINARIES)[number];

export interface ControlPlaneBinaries {
  readonly dir: string;
  /** The Kubernetes version the build stamped, e.g. v1.35.8. */
  readonly version: string;
  path(binary: ControlPlaneBinary): string;
}

/** The folder the build writes for a minor: tools/controlplane/<minor>/bin. */
export function binDirFor(minor: string): string {
  return join(REPO_ROOT, 'tools', 'controlplane', minor, 'bin');
}

/** The binaries, or why they cannot be used (one line). */
export function findControlPlane(minor = process.env.TOLERATOR_CONTROL_PLANE_VERSION ?? DEFAULT_MINOR): ControlPlaneBinaries | string {
  const dir = process.env.TOLERATOR_CONTROL_PLANE_BIN ?? binDirFor(minor);
  const versionFile = join(dir, 'VERSION');
  if (!existsSync(versionFile)) {
    return `the Kubernetes ${minor} control plane is not built (npm run control-plane:build -- --version ${minor})`;
  }
  const version = readFileSync(versionFile, 'utf8').trim();
  if (!version.startsWith(`v${minor}.`) && process.env.TOLERATOR_CONTROL_PLANE_BIN === undefined) {
    return `${versionFile} says ${version}, not a ${minor} build: rebuild with npm run control-plane:build -- --version ${minor}`;
  }
  const absent = CONTROL_PLANE_BINARIES.filter((binary) => !existsSync(join(dir, binary)));
  if (absent.length > 0) return `${dir} lacks ${absent.join(', ')}: rebuild with npm run control-plane:build -- --version ${minor}`;
  return { dir, version, path: (binary) => join(dir, binary) };
}

/**
 * The `skip` option of a suite that needs the control plane: false when it is built, else the
 * reason. With TOLERATOR_REQUIRE_CONTROL_PLANE=1 a missing build throws instead.
 */
export function skipWithoutControlPlane(): string | false {
  const found = findControlPlane();
  if (typeof found !== 'string') return false;
  if (REQUIRE_CONTROL_PLANE) throw new Error(`TOLERATOR_REQUIRE_CONTROL_PLANE=1 but ${found}`);
  return `${found}: skipped (TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure)`;
}

export interface Kubectl {
  readonly path: string;
  /** Where it came from, for the one line a suite prints. */
  readonly source: 'PATH' | 'control plane build';
}

/**
 * The kubectl the tests run (`kubectl kustomize`, `kubectl patch --local`): one on the PATH when
 * there is one, else the one built with the control plane, else undefined.
 */
export function findKubectl(): Kubectl | undefined {
  if (spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0) return { path: 'kubectl', source: 'PATH' };
  const built = findControlPlane();
  if (typeof built === 'string') return undefined;
  return { path: built.path('kubectl'), source: 'control plane build' };
}
