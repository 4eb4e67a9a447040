/**
 * `npm run control-plane -- --dir DIR [--version 1.35] [--enable-admission-plugins A,B]
 * [--disable-admission-plugins C] [--admission-control-config-file FILE] [--feature-gates K=V,...]
 * [--scheduler] [--controller-manager]`: a loopback control plane in the foreground, for trying
 * tolerator on a real API server. Flag names and meanings are kube-apiserver's own. It writes
 * DIR/kubeconfig (cluster-admin), links the binaries and the matching kubectl into DIR/bin/,
 * writes DIR/ready once /readyz answers (and DIR/pids, one process it started a line), and on SIGTERM or SIGINT, or when
 * the npm that ran it exits (`kill` of a backgrounded `npm run control-plane`), stops every process it started
 * and exits 0. Exit 2 for a usage error, 1 when a component fails to start (its log's end is
 * printed).
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MINOR } from './binaries.js';
import { startControlPlane } from './control-plane.js';
import { watchParents } from './parent-watch.js';

const usage = `usage: npm run control-plane -- --dir DIR [--version 1.35] [--enable-admission-plugins A,B]
  [--disable-admission-plugins C] [--admission-control-config-file FILE] [--feature-gates K=V,...]
  [--scheduler] [--controller-manager]`;

function list(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(',').filter((item) => item !== '');
}

async function main(argv: readonly string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        dir: { type: 'string' },
        version: { type: 'string', default: process.env.TOLERATOR_CONTROL_PLANE_VERSION ?? DEFAULT_MINOR },
        'enable-admission-plugins': { type: 'string' },
        'disable-admission-plugins': { type: 'string' },
        'admission-control-config-file': { type: 'string' },
        'feature-gates': { type: 'string' },
        scheduler: { type: 'boolean', default: false },
        'controller-manager': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    console.error(`control-plane: ${(error as Error).message}\n${usage}`);
    return 2;
  }
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (values.dir === undefined) {
    console.error(`control-plane: --dir is required\n${usage}`);
    return 2;
  }
  const dir = resolve(values.dir);
  let plane;
  try {
    plane = await startControlPlane({
      dir,
      version: values.version,
      enableAdmissionPlugins: list(values['enable-admission-plugins']),
      disableAdmissionPlugins: list(values['disable-admission-plugins']),
      admissionControlConfigFile: values['admission-control-config-file'],
      featureGates: values['feature-gates'],
      scheduler: values.scheduler,
      controllerManager: values['controller-manager'],
    });
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  writeFileSync(
    join(dir, 'pids'),
    plane
      .pids()
      .map((pid) => `${pid}\n`)
      .join(''),
  );
  console.log(`control plane ${plane.version} ready at ${plane.server}`);
  console.log(`  export KUBECONFIG=${plane.kubeconfig}; PATH=${dir}/bin:$PATH   (Ctrl-C stops it)`);
  const reason = await new Promise<string>((done) => {
    process.once('SIGTERM', () => {
      done('SIGTERM');
    });
    process.once('SIGINT', () => {
      done('SIGINT');
    });
    // `kill` of a backgrounded `npm run control-plane` reaches npm, not this process (parent-watch.ts).
    watchParents(done);
  });
  console.log(`control plane: ${reason}, stopping ${plane.pids().length} processes`);
  await plane.stop();
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
