/**
 * Which build of tolerator this is: the version (package.json's, which the chart's version and
 * appVersion and the image tag repeat: test/deploy/version.test.ts), the git revision it was built
 * from, and the Node.js it runs on. `tolerator --version` prints it and /metrics exports it as
 * tolerator_build_info, as Prometheus exporters do.
 *
 * The release's single executable has no package.json beside it: its bundler replaces
 * TOLERATOR_BUILD with the values (tools/release.ts). Everywhere else (npm start, the built bin,
 * the image) the version is read from package.json next to src/ or dist/, and the revision from
 * the TOLERATOR_REVISION environment variable (the image sets it from its build argument), else
 * "unknown": nothing reliable tells it otherwise at run time.
 */
import { readFileSync } from 'node:fs';

export interface BuildInfo {
  readonly version: string;
  readonly revision: string;
  readonly nodeVersion: string;
}

declare const TOLERATOR_BUILD: { readonly version: string; readonly revision: string } | undefined;

export function readBuildInfo(env: Readonly<Record<string, string | undefined>>, nodeVersion: string): BuildInfo {
  if (typeof TOLERATOR_BUILD !== 'undefined') return { ...TOLERATOR_BUILD, nodeVersion };
  let version = 'unknown';
  try {
    // src/build-info.ts and dist/build-info.js are both one folder below package.json.
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    if (typeof manifest.version === 'string') version = manifest.version;
  } catch {
    // A copy without its package.json: the version is unknown, which --version then says.
  }
  const revision = env.TOLERATOR_REVISION;
  return { version, revision: revision === undefined || revision === '' ? 'unknown' : revision, nodeVersion };
}

export function formatVersion(info: BuildInfo): string {
  return `tolerator ${info.version} (revision ${info.revision}, Node.js ${info.nodeVersion})\n`;
}
