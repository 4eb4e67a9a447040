/**
 * `npm run test:e2e`: the suites that need a real control plane (test/e2e/*.e2e.ts), run as part
 * of `npm test`. Builds the control plane first (`npm run control-plane:build`, a no-op when it
 * is built), then runs the suites with node's test runner. Where it cannot be built — no Go on
 * the machine and no build in tools/controlplane/ — it prints one line saying what it skipped and
 * why, and passes; with TOLERATOR_REQUIRE_CONTROL_PLANE=1 (CI) that is a failure instead.
 *
 * The suites have the suffix .e2e.ts, not .test.ts, so `npm run test:unit` never picks them up.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MINOR, REPO_ROOT, REQUIRE_CONTROL_PLANE, findControlPlane } from './binaries.js';
import { main as build } from './build.js';

function suiteFiles(folder: string): string[] {
  const dir = join(REPO_ROOT, 'test', folder);
  return readdirSync(dir)
    .filter((file) => file.endsWith('.e2e.ts'))
    .sort()
    .map((file) => join('test', folder, file));
}

function run(folder: string): number {
  const files = suiteFiles(folder);
  const minor = process.env.TOLERATOR_CONTROL_PLANE_VERSION ?? DEFAULT_MINOR;
  const hasGo = spawnSync('go', ['env', 'GOVERSION'], { stdio: 'ignore' }).status === 0;
  if (hasGo) {
    const built = build(['--version', minor]);
    if (built !== 0) return built;
  } else if (typeof findControlPlane(minor) === 'string') {
    const line = `${folder}: ${files.length} suites skipped: Go is not installed, so the Kubernetes ${minor} control plane cannot be built`;
    if (REQUIRE_CONTROL_PLANE) {
      console.error(`${line} (TOLERATOR_REQUIRE_CONTROL_PLANE=1: a failure)`);
      return 1;
    }
    console.log(`${line} (TOLERATOR_REQUIRE_CONTROL_PLANE=1 makes this a failure)`);
    return 0;
  }
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
    cwd: REPO_ROOT,
    stdio: 'inherit',
    // Built now: a suite that still finds no control plane is broken, not skipped.
    env: { ...process.env, TOLERATOR_REQUIRE_CONTROL_PLANE: '1' },
  });
  return result.status ?? 1;
}

const folder = process.argv[2];
if (folder !== 'e2e' && folder !== 'differential') {
  console.error('usage: node --import tsx test/cluster/run-suite.ts e2e|differential');
  process.exitCode = 2;
} else {
  process.exitCode = run(folder);
}
