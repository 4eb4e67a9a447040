/**
 * `npm run bench`: tolerator under load against a plain node:https floor, on the same payloads,
 * certificate and cores, in one run. Writes bench/RESULTS.md and prints the same tables.
 *
 *   npm run bench                 everything (≈ 9–10 minutes), the 60 s soak included
 *   npm run bench -- --soak       only the soak (after a short maximum-throughput measurement)
 *   npm run bench -- --skip-soak  everything but the soak
 *   npm run bench -- --quick      short runs, one round: to try the bench, not to quote
 *   npm run bench -- --no-profile no CPU profile when a target is missed
 *   npm run bench -- --baseline DIR
 *                                 adds a row to the throughput table: tolerator built in DIR
 *                                 (another checkout, after `npm ci && npm run build`), so that
 *                                 a change is compared with an earlier commit on the same machine
 *                                 in the same run
 *   npm run bench -- --only worst only the worst-review section (bench/worst.ts, several
 *                                 minutes: a fresh server per review, and bench/review-probe.ts
 *                                 in process for a body over the build's limit): replaces that
 *                                 section of bench/RESULTS.md and leaves the rest as it is;
 *                                 add --worst-filter <text> to run only the shapes naming it;
 *                                 it measures tenant fairness first (bench/tenant-fairness.ts:
 *                                 another team's 120 KB pod while one tenant keeps 0, 4, 6 of
 *                                 its 3 MiB pods in flight), with --baseline DIR for that build too
 *   npm run bench -- --only e2e   only pod creation through a real kube-apiserver with and
 *                                 without tolerator's webhooks (bench/e2e.ts; needs
 *                                 `npm run control-plane:build`, about two minutes)
 *   npm run bench -- --only starvation
 *                                 only the starvation section (bench/starvation.ts: ordinary
 *                                 reviews while ten large ones are in flight, about a minute):
 *                                 replaces that section and leaves the rest as it is
 *   npm run bench -- --only audit only the audit section (bench/audit.ts: `tolerator audit` of
 *                                 50,000 pods from a file and from an API server, about a
 *                                 minute): replaces that section and leaves the rest as it is
 *   npm run bench -- --only scale only the scale section (bench/scale.ts: serve's RSS with up to
 *                                 5,000 realistic Nodes and 10,000 Namespaces behind a fake API
 *                                 server, about a minute): replaces that section
 *   npm run bench -- --only regex only the CEL regular-expression section (bench/cel-regex.ts:
 *                                 RE2 against V8 RegExp, seconds): replaces that section
 *   npm run bench -- --only patch only the patch section (bench/patch.ts: tolerator's patches
 *                                 applied by kubectl patch --local, about a minute): replaces
 *                                 that section and leaves the rest as it is
 *
 * Servers run on core 0 (`taskset -c 0`), the load generator (autocannon, bench/load.ts) on
 * core 1. Throughput is requests/second with keep-alive connections answering as fast as the
 * server can; "CPU/req" is the server's CPU time (all its threads, /proc/<pid>/stat) divided by
 * the requests answered, which other processes on the machine disturb far less than throughput.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createCA, createServingCertificate } from '../test/support/certificates.js';
import { summarizeProfile, type ProfileSummary } from './cpu-profile.js';
import { LoadGenerator, type Measurement } from './load-client.js';
import { grownPod, mixPayloads, writeClusterState, writePolicies, type Payload } from './payloads.js';
import { checkAnswer, residentBytes, startServer, type Certificate, type RunningServer, type ServerSpec } from './servers.js';
import { measureWorstReviews, spliceWorstSection, worstSection, worstTargets } from './worst.js';
import { measureAudit, spliceAuditSection } from './audit.js';
import { measureScale, scaleSection, scaleTargetMib, spliceScaleSection, targetRow } from './scale.js';
import { measureE2e, spliceE2eSection } from './e2e.js';
import { measureCelRegex, spliceRegexSection } from './cel-regex.js';
import { measurePatchCost, splicePatchSection } from './patch.js';
import { fairnessLines, measureTenantFairness } from './tenant-fairness.js';
import { measureStarvation, spliceStarvationSection, starvationSection, starvationTargetMs } from './starvation.js';

const { values: flags } = parseArgs({
  options: {
    soak: { type: 'boolean', default: false },
    'skip-soak': { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    'no-profile': { type: 'boolean', default: false },
    only: { type: 'string' },
    'worst-filter': { type: 'string' },
    baseline: { type: 'string' },
  },
});
/** Where bench/RESULTS.md's hand-kept part starts: a full run rewrites what is above it only. */
const keptByHandMarker = '<!-- kept by hand';
const aloneSections = ['worst', 'audit', 'e2e', 'regex', 'patch', 'starvation', 'scale'];
if (flags.only !== undefined && !aloneSections.includes(flags.only)) {
  throw new Error(`--only ${flags.only}: the sections that run alone are ${aloneSections.map((name) => `"${name}"`).join(', ')}`);
}

const root = new URL('..', import.meta.url).pathname;
const quick = flags.quick;
/** Seconds per measured run and its warm-up; rounds of the main comparison. */
const plan = {
  rounds: quick ? 1 : 3,
  seconds: quick ? 3 : 5,
  warmup: quick ? 1 : 2,
  growthSeconds: quick ? 2 : 3,
  policyRounds: quick ? 1 : 3,
  soakSeconds: 60,
  soakWarmupSeconds: 10,
  fixedRate: 200,
  /** The fixed rate for the pod-size runs: 100 containers must stay well below saturation. */
  growthRate: 50,
  profileSeconds: quick ? 4 : 8,
};

const started = new Date();
const lines: string[] = [];
function out(text = ''): void {
  lines.push(text);
  process.stdout.write(`${text}\n`);
}
function note(text: string): void {
  process.stderr.write(`bench: ${text}\n`);
}

// ---- formatting -------------------------------------------------------------------------------

const fmt = {
  rps: (n: number) => Math.round(n).toLocaleString('en-US'),
  ms: (n: number) => n.toFixed(2),
  us: (n: number) => Math.round(n).toLocaleString('en-US'),
  ratio: (n: number) => n.toFixed(2),
  mib: (bytes: number) => (bytes / 1024 / 1024).toFixed(1),
  pct: (n: number) => `${(n * 100).toFixed(1)} %`,
  kib: (bytes: number) => (bytes / 1024).toFixed(1),
};

function table(header: readonly string[], rows: readonly (readonly string[])[]): void {
  out(`| ${header.join(' | ')} |`);
  out(`|${header.map((h) => (h === header[0] ? ' --- ' : ' ---: ')).join('|')}|`);
  for (const row of rows) out(`| ${row.join(' | ')} |`);
  out();
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? Number.NaN) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

interface Summary {
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
  busy: number;
  loaderBusy: number;
}

function summarize(runs: readonly Measurement[]): Summary {
  return {
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    cpuUs: median(runs.map((r) => r.serverCpuUsPerRequest)),
    busy: median(runs.map((r) => r.serverBusy)),
    loaderBusy: median(runs.map((r) => r.loadCpuSeconds / r.wallSeconds)),
  };
}

// ---- targets ----------------------------------------------------------------------------------

interface Target {
  readonly name: string;
  readonly goal: string;
  readonly measured: string;
  readonly met: boolean;
  /** What to profile when missed. */
  readonly profile?: { spec: ServerSpec; payloads: readonly Payload[]; connections: number };
}
const targets: Target[] = [];

// ---- set-up -----------------------------------------------------------------------------------

function machine(): { nproc: string; cpu: string; node: string; commit: string } {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const cpu = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? 'unknown';
  let nproc = String(availableParallelism());
  try {
    nproc = execFileSync('nproc', { encoding: 'utf8' }).trim();
  } catch {
    // nproc missing: availableParallelism says the same.
  }
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', 'src'], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    if (dirty !== '') commit += ' (src/ with uncommitted changes)';
  } catch {
    // not a git checkout
  }
  return { nproc, cpu, node: process.version, commit };
}

async function prepare(
  dir: string,
): Promise<{ certificate: Certificate; clusterState: (n: number) => string; policies: (n: number) => string }> {
  const ca = await createCA('tolerator-bench-ca');
  const leaf = await createServingCertificate(ca, ['localhost']);
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  writeFileSync(certFile, leaf.cert);
  writeFileSync(keyFile, leaf.key, { mode: 0o600 });
  const clusterState = (n: number): string => {
    const path = join(dir, `cluster-state-${n}.json`);
    writeClusterState(path, n);
    return path;
  };
  const policies = (n: number): string => {
    const path = join(dir, `policies-${n}`);
    writePolicies(path, n);
    return path;
  };
  return { certificate: { ca: ca.cert, certFile, keyFile }, clusterState, policies };
}

// ---- the run ----------------------------------------------------------------------------------

async function main(): Promise<void> {
  const host = machine();
  const load0 = loadavg();
  if (!flags['no-build']) {
    note('npm run build');
    const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-bench-'));
  const { certificate, clusterState, policies } = await prepare(dir);
  /** The worst-review section: its lines, and its targets pushed. */
  const worst = async (): Promise<string[]> => {
    const sectionStarted = new Date();
    const load = loadavg();
    const file = join(dir, 'cluster-state-worst.json');
    writeClusterState(file, 10_000, 5_000);
    const rows = await measureWorstReviews({
      certificate,
      clusterStateFile: file,
      policiesDir: join(root, 'policies'),
      warmup: mixPayloads(),
      note,
      ...(flags['worst-filter'] === undefined ? {} : { filter: flags['worst-filter'] }),
    });
    const fairnessSeconds = quick ? 5 : 10;
    const fairness = await measureTenantFairness({
      certificate,
      clusterStateFile: file,
      policiesDir: join(root, 'policies'),
      warmup: mixPayloads(),
      root,
      builds: [
        { label: 'this build, derived review workers' },
        { label: 'this build, --review-workers 1', serveArgs: ['--review-workers', '1'] },
        ...(flags.baseline === undefined
          ? []
          : [{ label: `baseline ${baselineCommit(flags.baseline)}`, main: baselineMain(flags.baseline) }]),
      ],
      seconds: fairnessSeconds,
      note,
    });
    const slowest = rows.reduce((a, b) => (b.maxMs > a.maxMs ? b : a));
    const heaviest = rows.reduce((a, b) => (b.heapAboveIdleMib > a.heapAboveIdleMib ? b : a));
    targets.push({
      name: 'the worst review',
      goal: `< ${worstTargets.ms} ms, heap < ${worstTargets.heapMib} MiB above idle`,
      measured: `slowest ${Math.round(slowest.maxMs).toLocaleString('en-US')} ms (${slowest.review.shape} ${slowest.review.path}); largest heap ${heaviest.heapAboveIdleMib.toFixed(1)} MiB (${heaviest.review.shape} ${heaviest.review.path})`,
      met: slowest.maxMs < worstTargets.ms && heaviest.heapAboveIdleMib < worstTargets.heapMib,
    });
    const host = machine();
    const section = worstSection(rows, [
      `- date: ${sectionStarted.toISOString()}; command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`; took ${((Date.now() - sectionStarted.getTime()) / 1000).toFixed(0)} s`,
      `- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average at start ${load.map((n) => n.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    ]);
    // Before its end marker: the fairness measurement of the same run.
    return [...section.slice(0, -1), ...fairnessLines(fairness, fairnessSeconds), ...section.slice(-1)];
  };
  /** The starvation section: its lines, and its target pushed. */
  const starvation = async (): Promise<string[]> => {
    const sectionStarted = new Date();
    const load = loadavg();
    const file = join(dir, 'cluster-state-starvation.json');
    writeClusterState(file, 10_000, 5_000);
    const seconds = quick ? 5 : 15;
    const result = await measureStarvation({
      certificate,
      clusterStateFile: file,
      policiesDir: join(root, 'policies'),
      small: mixPayloads(),
      seconds,
      note,
    });
    targets.push({
      name: 'an ordinary review while ten large ones are in flight',
      goal: `slowest < ${starvationTargetMs.toLocaleString('en-US')} ms`,
      measured: `slowest ${Math.round(result.loaded.maxMs).toLocaleString('en-US')} ms, p99 ${Math.round(result.loaded.p99Ms).toLocaleString('en-US')} ms (alone: slowest ${result.idle.maxMs.toFixed(1)} ms)`,
      met: result.loaded.maxMs < starvationTargetMs && Object.keys(result.loaded.statuses).every((status) => status === '200'),
    });
    const host = machine();
    return starvationSection(
      result,
      [
        `- date: ${sectionStarted.toISOString()}; command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`; took ${((Date.now() - sectionStarted.getTime()) / 1000).toFixed(0)} s`,
        `- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average at start ${load.map((n) => n.toFixed(2)).join(' ')}, at the end ${loadavg()
          .map((n) => n.toFixed(2))
          .join(' ')}`,
      ],
      seconds,
    );
  };
  /** The audit section: its lines. */
  const audit = async (): Promise<string[]> => {
    const sectionStarted = new Date();
    const load = loadavg();
    const host = machine();
    const section = await measureAudit({ root, dir, note });
    const header = [
      `- date: ${sectionStarted.toISOString()}; command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`; took ${((Date.now() - sectionStarted.getTime()) / 1000).toFixed(0)} s`,
      `- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average at start ${load.map((n) => n.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    ];
    // The date and machine go after the title (the first three lines: marker, title, blank).
    return [...section.slice(0, 3), ...header, '', ...section.slice(3)];
  };
  /** The scale section: its lines, and its target pushed. */
  const scale = async (load: LoadGenerator): Promise<string[]> => {
    const sectionStarted = new Date();
    const loadAtStart = loadavg();
    const rows = await measureScale({ root, dir, certificate, load, mix: mixPayloads(), seconds: plan.seconds * 2, note });
    const largest = targetRow(rows);
    const floor = rows[0];
    if (largest !== undefined && floor !== undefined) {
      targets.push({
        name: `${largest.nodes.toLocaleString('en-US')} realistic nodes and ${largest.namespaces.toLocaleString('en-US')} namespaces watched`,
        goal: `peak RSS during start < ${scaleTargetMib} MiB`,
        measured: `${largest.peakAtStartMib.toFixed(1)} MiB peak during start, ${largest.rssAtStartMib.toFixed(1)} MiB once ready, ${largest.memory} (after load ${largest.rssAfterLoadMib.toFixed(1)}, peak ${largest.peakMib.toFixed(1)}; floor of ${floor.nodes} nodes: ${floor.rssAtStartMib.toFixed(1)} at start, peak ${floor.peakMib.toFixed(1)} MiB)`,
        met: largest.peakAtStartMib < scaleTargetMib,
      });
    }
    const host = machine();
    return scaleSection(rows, [
      `- date: ${sectionStarted.toISOString()}; command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`; took ${((Date.now() - sectionStarted.getTime()) / 1000).toFixed(0)} s`,
      `- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average at start ${loadAtStart.map((n) => n.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    ]);
  };
  /** One section alone (`--only NAME`): printed, spliced into bench/RESULTS.md, the temporary folder removed. */
  const runAlone = async (
    label: string,
    produce: () => string[] | Promise<string[]>,
    splice: (text: string, section: readonly string[]) => string,
  ): Promise<void> => {
    try {
      const section = await produce();
      for (const line of section) out(line);
      const file = join(root, 'bench', 'RESULTS.md');
      writeFileSync(file, splice(readFileSync(file, 'utf8'), section));
      note(`replaced the ${label} section of bench/RESULTS.md`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  if (flags.only === 'scale') {
    const load = new LoadGenerator(root);
    try {
      const section = await scale(load);
      for (const line of section) out(line);
      const file = join(root, 'bench', 'RESULTS.md');
      writeFileSync(file, spliceScaleSection(readFileSync(file, 'utf8'), section));
      note('replaced the scale section of bench/RESULTS.md');
    } finally {
      await load.close();
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  if (flags.only === 'e2e') {
    try {
      const sectionStarted = new Date();
      const load = loadavg();
      const section = await measureE2e({ dir, quick, note });
      const header = [
        `- date: ${sectionStarted.toISOString()}; command: \`npm run bench -- ${process.argv.slice(2).join(' ')}\`; took ${((Date.now() - sectionStarted.getTime()) / 1000).toFixed(0)} s`,
        `- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average at start ${load.map((n) => n.toFixed(2)).join(' ')}`,
      ];
      const lines = [...section.slice(0, 3), ...header, ...section.slice(3)];
      for (const line of lines) out(line);
      const file = join(root, 'bench', 'RESULTS.md');
      writeFileSync(file, spliceE2eSection(readFileSync(file, 'utf8'), lines));
      note('replaced the e2e section of bench/RESULTS.md');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  /** The CEL regular-expression section: its lines, with the date and machine after the title. */
  const regex = (): string[] => {
    const load = loadavg();
    const host = machine();
    const section = measureCelRegex(note);
    const header = [
      `- date: ${new Date().toISOString()}; machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average ${load.map((n) => n.toFixed(2)).join(' ')}`,
    ];
    return [...section.slice(0, 3), ...header, '', ...section.slice(3)];
  };
  if (flags.only === 'regex') {
    await runAlone('CEL regular-expression', regex, spliceRegexSection);
    return;
  }
  /** The patch section: its lines. */
  const patch = async (): Promise<string[]> => {
    const sectionStarted = new Date();
    const load = loadavg();
    const host = machine();
    const section = await measurePatchCost({ dir, note });
    const header = [
      `- date: ${sectionStarted.toISOString()}; command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`; took ${((Date.now() - sectionStarted.getTime()) / 1000).toFixed(0)} s`,
      `- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}; load average at start ${load.map((n) => n.toFixed(2)).join(' ')}, at the end ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}`,
    ];
    return [...section.slice(0, 3), ...header, '', ...section.slice(3)];
  };
  if (flags.only === 'patch') {
    await runAlone('patch', patch, splicePatchSection);
    return;
  }
  if (flags.only === 'audit') {
    await runAlone('audit', audit, spliceAuditSection);
    return;
  }
  if (flags.only === 'starvation') {
    await runAlone('starvation', starvation, spliceStarvationSection);
    return;
  }
  if (flags.only === 'worst') {
    await runAlone('worst-review', worst, spliceWorstSection);
    return;
  }
  const state10 = clusterState(10);
  const shippedPolicies = join(root, 'policies');
  const mix = mixPayloads();
  const load = new LoadGenerator(root);
  const running = new Set<RunningServer>();
  const start = async (spec: ServerSpec): Promise<RunningServer> => {
    note(`starting ${spec.label}`);
    const server = await startServer(spec, certificate);
    running.add(server);
    return server;
  };
  const stop = async (server: RunningServer): Promise<void> => {
    running.delete(server);
    await server.stop();
  };
  const check = async (server: RunningServer, payloads: readonly Payload[]): Promise<void> => {
    for (const payload of payloads) await checkAnswer(server, payload, certificate);
  };
  const measure = (
    server: RunningServer,
    requests: readonly Payload[],
    connections: number,
    seconds: number,
    warmupSeconds: number,
    overallRate?: number,
  ): Promise<Measurement> => {
    note(`${server.spec.label}: ${connections} connections${overallRate === undefined ? '' : ` at ${overallRate}/s`}, ${seconds} s`);
    return load.measure(server.pid, {
      url: server.url,
      connections,
      seconds,
      warmupSeconds,
      ...(overallRate === undefined ? {} : { overallRate }),
      requests: requests.map(({ path, body }) => ({ path, body })),
    });
  };

  const tolerator = (label: string, extra: Partial<ServerSpec> = {}): ServerSpec => ({
    label,
    kind: 'tolerator',
    logLevel: 'warn',
    policiesDir: shippedPolicies,
    clusterStateFile: state10,
    ...extra,
  });
  const floorSpec: ServerSpec = { label: 'floor', kind: 'floor' };
  const expressSpec: ServerSpec = { label: 'reference: floor behind express 5', kind: 'express-floor' };
  const warnSpec = tolerator('tolerator (log warn)');
  const infoSpec = tolerator('tolerator (log info)', { logLevel: 'info' });
  const baselineSpec = flags.baseline === undefined ? undefined : baselineServer(flags.baseline, tolerator);

  let infoMax: number | undefined;
  try {
    out(`# tolerator benchmark`);
    out();
    out(`- date: ${started.toISOString()}`);
    out(
      `- command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\` (node --import tsx bench/run.ts)`,
    );
    out(`- machine: ${host.nproc} cores (nproc), ${host.cpu}; Node.js ${host.node}; commit ${host.commit}`);
    out(
      `- load average at start: ${load0.map((n) => n.toFixed(2)).join(' ')} (other work on the machine shares both cores; compare ratios within this run)`,
    );
    out(
      `- servers on core 0 (\`taskset -c 0\`), autocannon on core 1 (\`taskset -c 1\`), HTTPS with keep-alive, certificate from a generated CA (ECDSA P-256)`,
    );
    out(
      `- tolerator: \`node --enable-experimental-regexp-engine-on-excessive-backtracks dist/main.js serve --port P --bind-address 127.0.0.1 --tls-cert-file F --tls-private-key-file K --log-level warn|info --policies policies --cluster-state <10 namespaces>\`, logs to /dev/null`,
    );
    out(
      `- floor: bench/floor-server.ts, plain \`node:https\`: reads the body, JSON.parse, appends one toleration as a JSON Patch, answers an AdmissionReview`,
    );
    out(
      `- reference (not a target): the floor's work behind express 5 and \`express.raw\`, as src/http/app.ts reads bodies (\`floor-server.ts --express\`): what the framework alone adds`,
    );
    out(`- mix (sent in turn on every connection): ${mix.map((p) => `${p.name} ${p.path}`).join(', ')}`);
    out();

    if (!flags.soak) {
      // ---- A: throughput and latency against the floor ----
      const floor = await start(floorSpec);
      const warn = await start(warnSpec);
      const info = await start(infoSpec);
      const expressFloor = await start(expressSpec);
      const baseline = baselineSpec === undefined ? undefined : await start(baselineSpec);
      const main = [floor, warn, info, expressFloor, ...(baseline === undefined ? [] : [baseline])];
      for (const server of main) await check(server, mix);
      const runs = new Map<RunningServer, { c16: Measurement[]; c64: Measurement[]; fixed: Measurement[] }>(
        main.map((s) => [s, { c16: [], c64: [], fixed: [] }]),
      );
      for (let round = 0; round < plan.rounds; round++) {
        const order = [...main.slice(round % main.length), ...main.slice(0, round % main.length)];
        note(`round ${round + 1}/${plan.rounds}: ${order.map((s) => s.spec.label).join(', ')}`);
        for (const server of order) {
          const bucket = runs.get(server);
          if (bucket === undefined) continue;
          bucket.c16.push(await measure(server, mix, 16, plan.seconds, plan.warmup));
          bucket.c64.push(await measure(server, mix, 64, plan.seconds, 1));
          bucket.fixed.push(await measure(server, mix, 1, plan.seconds, 1, plan.fixedRate));
        }
      }
      const summaries = new Map(
        [...runs].map(([server, bucket]) => [
          server,
          { c16: summarize(bucket.c16), c64: summarize(bucket.c64), fixed: summarize(bucket.fixed) },
        ]),
      );
      const floorSummary = summaries.get(floor);
      if (floorSummary === undefined) throw new Error('no floor measurements');
      out(`## Throughput and latency (median of ${plan.rounds} round${plan.rounds > 1 ? 's' : ''}, server order rotated each round)`);
      out();
      out(
        `Throughput: ${plan.seconds} s per run after a warm-up. Latency: autocannon \`overallRate: ${plan.fixedRate}\` on one keep-alive connection — autocannon's limiter sends each connection's share at the start of every second, so with one connection each review is timed alone and nothing queues behind another (more connections would measure their burst).`,
      );
      out();
      table(
        [
          'server',
          'req/s @16',
          'ratio',
          'req/s @64',
          'ratio',
          'CPU/req µs',
          'ratio by CPU',
          `p50 ms @${plan.fixedRate}/s`,
          'ratio',
          `p99 ms @${plan.fixedRate}/s`,
          'server core busy @64',
          'loader core busy @64',
          'RSS MiB',
        ],
        main.map((server) => {
          const s = summaries.get(server);
          if (s === undefined) return [];
          return [
            server.spec.label,
            fmt.rps(s.c16.rps),
            fmt.ratio(s.c16.rps / floorSummary.c16.rps),
            fmt.rps(s.c64.rps),
            fmt.ratio(s.c64.rps / floorSummary.c64.rps),
            fmt.us(s.c64.cpuUs),
            fmt.ratio(floorSummary.c64.cpuUs / s.c64.cpuUs),
            fmt.ms(s.fixed.p50),
            fmt.ratio(s.fixed.p50 / floorSummary.fixed.p50),
            fmt.ms(s.fixed.p99),
            fmt.pct(s.c64.busy),
            fmt.pct(s.c64.loaderBusy),
            fmt.mib(residentBytes(server.pid)),
          ];
        }),
      );
      out(
        `"ratio by CPU" is the floor's CPU time per request over the server's, measured @64: the throughput ratio both would reach on a core of their own, which other work on the machine disturbs less than req/s.`,
      );
      out();
      out(
        `Per round (req/s @64): ${main.map((s) => `${s.spec.label}: ${(runs.get(s)?.c64 ?? []).map((r) => fmt.rps(r.rps)).join(' / ')}`).join('; ')}`,
      );
      out();
      for (const [server, spec] of [
        [warn, warnSpec],
        [info, infoSpec],
      ] as const) {
        const s = summaries.get(server);
        if (s === undefined) continue;
        const throughputRatio = s.c64.rps / floorSummary.c64.rps;
        const latencyRatio = s.fixed.p50 / floorSummary.fixed.p50;
        targets.push({
          name: `throughput at 64 connections, ${server.spec.label}`,
          goal: '≥ 0.75 × floor',
          measured: `${fmt.ratio(throughputRatio)} × (${fmt.rps(s.c64.rps)} vs ${fmt.rps(floorSummary.c64.rps)} req/s; by CPU/req ${fmt.ratio(floorSummary.c64.cpuUs / s.c64.cpuUs)} ×)`,
          met: throughputRatio >= 0.75,
          profile: { spec, payloads: mix, connections: 64 },
        });
        targets.push({
          name: `p50 at ${plan.fixedRate} req/s, ${server.spec.label}`,
          goal: '≤ 1.5 × floor',
          measured: `${fmt.ratio(latencyRatio)} × (${fmt.ms(s.fixed.p50)} vs ${fmt.ms(floorSummary.fixed.p50)} ms)`,
          met: latencyRatio <= 1.5,
          profile: { spec, payloads: mix, connections: 64 },
        });
      }
      infoMax = summaries.get(info)?.c64.rps;
      const baselineSummary = baseline === undefined ? undefined : summaries.get(baseline);
      const warnSummary = summaries.get(warn);
      if (baseline !== undefined && baselineSummary !== undefined && warnSummary !== undefined) {
        out(
          `Against the baseline (${baseline.spec.label}), in this run: tolerator (log warn) ${fmt.ratio(warnSummary.c64.rps / baselineSummary.c64.rps)} × its throughput at 64 connections, ${fmt.us(warnSummary.c64.cpuUs)} µs of CPU a request against ${fmt.us(baselineSummary.c64.cpuUs)} (${fmt.ratio(warnSummary.c64.cpuUs / baselineSummary.c64.cpuUs)} ×).`,
        );
        out();
      }

      // ---- B: cost against pod size ----
      const sizes: { containers: number; tolerations: number }[] = [
        { containers: 1, tolerations: 0 },
        { containers: 10, tolerations: 0 },
        { containers: 100, tolerations: 0 },
        { containers: 1, tolerations: 50 },
        { containers: 1, tolerations: 500 },
      ];
      const growth: { size: (typeof sizes)[number]; payload: Payload; tol: Summary; floor: Summary; patch: number }[] = [];
      for (const [index, size] of sizes.entries()) {
        const payload = grownPod(size.containers, size.tolerations);
        const answer = await checkAnswer(warn, payload, certificate);
        await checkAnswer(floor, payload, certificate);
        const order = index % 2 === 0 ? [warn, floor] : [floor, warn];
        const results = new Map<RunningServer, Summary>();
        for (const server of order) {
          const throughput = await measure(server, [payload], 16, plan.growthSeconds, 1);
          const fixed = await measure(server, [payload], 1, plan.growthSeconds, 1, plan.growthRate);
          results.set(server, {
            rps: throughput.rps,
            cpuUs: throughput.serverCpuUsPerRequest,
            busy: throughput.serverBusy,
            loaderBusy: throughput.loadCpuSeconds / throughput.wallSeconds,
            p50: fixed.p50,
            p99: fixed.p99,
          });
        }
        const tol = results.get(warn);
        const flo = results.get(floor);
        if (tol !== undefined && flo !== undefined) growth.push({ size, payload, tol, floor: flo, patch: answer.patchOperations });
      }
      out(
        `## Cost against pod size (mutate, ${warn.spec.label} and floor; ${plan.growthSeconds} s at 16 connections, p50 at ${plan.growthRate} req/s on one connection)`,
      );
      out();
      table(
        [
          'pod',
          'body KiB',
          'patch ops',
          'tolerator req/s',
          'floor req/s',
          'tolerator CPU/req µs',
          'floor CPU/req µs',
          'tolerator p50 ms',
          'floor p50 ms',
        ],
        growth.map((g) => [
          g.payload.name,
          fmt.kib(Buffer.byteLength(g.payload.body)),
          String(g.patch),
          fmt.rps(g.tol.rps),
          fmt.rps(g.floor.rps),
          fmt.us(g.tol.cpuUs),
          fmt.us(g.floor.cpuUs),
          fmt.ms(g.tol.p50),
          fmt.ms(g.floor.p50),
        ]),
      );
      const cost = (containers: number, tolerations: number): number =>
        growth.find((g) => g.size.containers === containers && g.size.tolerations === tolerations)?.tol.cpuUs ?? Number.NaN;
      const linear = (
        name: string,
        unit: string,
        small: number,
        medium: number,
        large: number,
        costOf: (n: number) => number,
        spec: ServerSpec,
        payload: Payload,
      ): void => {
        // Linear cost a + b·n has the same cost per added item between every pair of sizes; a
        // quadratic term makes the per-item cost of the larger step grow with n. Allow 2× for noise.
        const first = (costOf(medium) - costOf(small)) / (medium - small);
        const second = (costOf(large) - costOf(medium)) / (large - medium);
        const ratio = second / Math.max(first, 0.05);
        targets.push({
          name: `cost linear in ${name}`,
          goal: `per-${unit} CPU cost ${medium}→${large} ≤ 2 × ${small}→${medium}`,
          measured: `${second.toFixed(2)} vs ${first.toFixed(2)} µs per ${unit} (${fmt.ratio(ratio)} ×)`,
          met: ratio <= 2,
          profile: { spec, payloads: [payload], connections: 16 },
        });
      };
      const largest = (predicate: (g: (typeof growth)[number]) => boolean): Payload =>
        growth.filter(predicate).at(-1)?.payload ?? mix[0] ?? grownPod(1, 0);
      linear(
        'containers',
        'container',
        1,
        10,
        100,
        (n) => cost(n, 0),
        warnSpec,
        largest((g) => g.size.tolerations === 0),
      );
      linear(
        'tolerations',
        'toleration',
        0,
        50,
        500,
        (n) => cost(1, n),
        warnSpec,
        largest((g) => g.size.containers === 1),
      );
      for (const server of main) await stop(server);

      // ---- C: tenancy policies ----
      const policyCounts = [1, 10, 100];
      const policyServers = new Map<number, RunningServer>();
      const policySpecs = new Map<number, ServerSpec>();
      for (const count of policyCounts) {
        const spec = tolerator(`${count} polic${count === 1 ? 'y' : 'ies'}`, { policiesDir: policies(count) });
        policySpecs.set(count, spec);
        const server = await start(spec);
        await check(server, mix);
        policyServers.set(count, server);
      }
      const policyRuns = new Map<number, { throughput: Measurement[]; fixed: Measurement[] }>(
        policyCounts.map((n) => [n, { throughput: [], fixed: [] }]),
      );
      for (let round = 0; round < plan.policyRounds; round++) {
        const order = round % 2 === 0 ? policyCounts : [...policyCounts].reverse();
        for (const count of order) {
          const server = policyServers.get(count);
          const bucket = policyRuns.get(count);
          if (server === undefined || bucket === undefined) continue;
          bucket.throughput.push(await measure(server, mix, 16, plan.seconds - 1, plan.warmup));
          bucket.fixed.push(await measure(server, mix, 1, plan.seconds - 1, 1, plan.fixedRate));
        }
      }
      const policySummary = new Map(
        policyCounts.map((n) => {
          const bucket = policyRuns.get(n);
          const throughput = summarize(bucket?.throughput ?? []);
          const fixed = summarize(bucket?.fixed ?? []);
          return [n, { rps: throughput.rps, cpuUs: throughput.cpuUs, p50: fixed.p50, p99: fixed.p99 }];
        }),
      );
      const one = policySummary.get(1);
      out(`## Tenancy policies (mix, log warn, 10 namespaces; median of ${plan.policyRounds} rounds, order reversed every other round)`);
      out();
      out(
        `Policy 1 is policies/dedicated-by-namespace-label.yaml; the others are the same shape on their own label keys, which no namespace carries, so each is evaluated and gives no group.`,
      );
      out();
      table(
        ['policies', 'req/s @16', 'CPU/req µs', 'CPU/req vs 1', `p50 ms @${plan.fixedRate}/s`, 'p50 vs 1', `p99 ms @${plan.fixedRate}/s`],
        policyCounts.map((n) => {
          const s = policySummary.get(n);
          if (s === undefined || one === undefined) return [];
          return [
            String(n),
            fmt.rps(s.rps),
            fmt.us(s.cpuUs),
            fmt.ratio(s.cpuUs / one.cpuUs),
            fmt.ms(s.p50),
            fmt.ratio(s.p50 / one.p50),
            fmt.ms(s.p99),
          ];
        }),
      );
      const hundred = policySummary.get(100);
      const hundredSpec = policySpecs.get(100);
      if (one !== undefined && hundred !== undefined && hundredSpec !== undefined) {
        const growthShare = hundred.cpuUs / one.cpuUs - 1;
        targets.push({
          name: '100 policies against 1',
          goal: '< 20 % more CPU per review',
          measured: `+${fmt.pct(growthShare)} CPU/req (${fmt.us(hundred.cpuUs)} vs ${fmt.us(one.cpuUs)} µs); p50 +${fmt.pct(hundred.p50 / one.p50 - 1)}; req/s ${fmt.rps(hundred.rps)} vs ${fmt.rps(one.rps)}`,
          met: growthShare < 0.2,
          profile: { spec: hundredSpec, payloads: mix, connections: 16 },
        });
      }
      for (const server of policyServers.values()) await stop(server);

      // ---- D: namespaces in the cache ----
      const namespaceCounts = [10, 10_000];
      out(`## Namespaces in the cache (\`--cluster-state\`, mix, log warn, shipped policies)`);
      out();
      const namespaceRows: string[][] = [];
      const loadedRss = new Map<number, number>();
      for (const count of namespaceCounts) {
        const file = count === 10 ? state10 : clusterState(count);
        const server = await start(tolerator(`${count} namespaces`, { clusterStateFile: file }));
        const idle = residentBytes(server.pid);
        await check(server, mix);
        const throughput = await measure(server, mix, 16, plan.seconds - 1, plan.warmup);
        const fixed = await measure(server, mix, 1, plan.seconds - 1, 1, plan.fixedRate);
        const loaded = residentBytes(server.pid);
        loadedRss.set(count, loaded);
        namespaceRows.push([
          count.toLocaleString('en-US'),
          fmt.kib(Buffer.byteLength(readFileSync(file))),
          (server.startupMs / 1000).toFixed(2),
          fmt.mib(idle),
          fmt.mib(loaded),
          fmt.rps(throughput.rps),
          fmt.us(throughput.serverCpuUsPerRequest),
          fmt.ms(fixed.p50),
          fmt.ms(fixed.p99),
        ]);
        if (count === 10_000) {
          targets.push({
            name: '10,000 namespaces cached',
            goal: '< 150 MiB RSS',
            measured: `${fmt.mib(loaded)} MiB after load (${fmt.mib(idle)} MiB idle after start; 10 namespaces: ${fmt.mib(loadedRss.get(10) ?? Number.NaN)} MiB)`,
            met: loaded < 150 * 1024 * 1024,
          });
        }
        await stop(server);
      }
      table(
        [
          'namespaces',
          'file KiB',
          'start to ready s',
          'RSS idle MiB',
          'RSS after load MiB',
          'req/s @16',
          'CPU/req µs',
          `p50 ms @${plan.fixedRate}/s`,
          `p99 ms @${plan.fixedRate}/s`,
        ],
        namespaceRows,
      );
    }

    // ---- the worst review, starvation, the audit ----
    if (!flags.soak) {
      for (const line of await worst()) out(line);
      out();
      for (const line of await starvation()) out(line);
      out();
      for (const line of await audit()) out(line);
      out();
      for (const line of regex()) out(line);
      out();
      for (const line of await patch()) out(line);
      out();
      for (const line of await scale(load)) out(line);
      out();
    }

    // ---- E: soak ----
    if (!flags['skip-soak']) {
      const server = await start(infoSpec);
      await check(server, mix);
      if (infoMax === undefined) {
        infoMax = (await measure(server, mix, 64, plan.seconds, plan.warmup)).rps;
      }
      const rate = Math.round(infoMax * 0.8);
      const samples: { at: number; rss: number }[] = [];
      let timer: NodeJS.Timeout | undefined;
      let t0 = 0;
      const soak = load.measure(
        server.pid,
        {
          url: server.url,
          connections: 16,
          seconds: plan.soakSeconds,
          warmupSeconds: 0,
          overallRate: rate,
          requests: mix.map(({ path, body }) => ({ path, body })),
        },
        {
          onMeasuring: () => {
            t0 = performance.now();
            timer = setInterval(() => {
              samples.push({ at: (performance.now() - t0) / 1000, rss: residentBytes(server.pid) });
            }, 1000);
          },
        },
      );
      note(`soak: ${plan.soakSeconds} s at ${rate} req/s`);
      let result: Measurement;
      try {
        result = await soak;
      } finally {
        clearInterval(timer);
      }
      const afterWarmup = samples.find((s) => s.at >= plan.soakWarmupSeconds) ?? samples[0];
      const end = samples.at(-1);
      out(
        `## Soak (${infoSpec.label}, ${plan.soakSeconds} s at 80 % of its maximum: ${fmt.rps(rate)} req/s offered on 16 connections, part of the main run)`,
      );
      out();
      if (afterWarmup !== undefined && end !== undefined) {
        const grew = end.rss / afterWarmup.rss - 1;
        const peak = Math.max(...samples.map((s) => s.rss));
        // RSS saws up and down with each major GC (the heap grows, is collected, shrinks), so two
        // single samples may catch different phases. What stays after collection is the lowest
        // RSS of a window: the 10 s after the warm-up against the last 10 s.
        const windowMin = (from: number, to: number): number =>
          Math.min(...samples.filter((s) => s.at >= from && s.at < to).map((s) => s.rss));
        const early = windowMin(plan.soakWarmupSeconds, plan.soakWarmupSeconds + 10);
        const late = windowMin(plan.soakSeconds - 10, Number.POSITIVE_INFINITY);
        const retained = late / early - 1;
        table(
          [
            'req/s achieved',
            'requests',
            'p50 ms',
            'p99 ms',
            `RSS at ${afterWarmup.at.toFixed(0)} s MiB`,
            `RSS at ${end.at.toFixed(0)} s MiB`,
            'growth',
            'peak MiB',
            `lowest ${plan.soakWarmupSeconds}–${plan.soakWarmupSeconds + 10} s`,
            'lowest in last 10 s',
            'growth of lowest',
          ],
          [
            [
              fmt.rps(result.rps),
              result.requests.toLocaleString('en-US'),
              fmt.ms(result.p50),
              fmt.ms(result.p99),
              fmt.mib(afterWarmup.rss),
              fmt.mib(end.rss),
              fmt.pct(grew),
              fmt.mib(peak),
              fmt.mib(early),
              fmt.mib(late),
              fmt.pct(retained),
            ],
          ],
        );
        out(`RSS every second (MiB): ${samples.map((s) => fmt.mib(s.rss)).join(' ')}`);
        out();
        targets.push({
          name: 'soak memory growth',
          goal: `< 10 % from ${plan.soakWarmupSeconds} s to the end`,
          measured: `${fmt.pct(grew)} (${fmt.mib(afterWarmup.rss)} → ${fmt.mib(end.rss)} MiB); lowest RSS of the windows ${fmt.pct(retained)}`,
          met: grew < 0.1 && retained < 0.1,
        });
      }
      await stop(server);
    }

    // ---- targets and profiles ----
    out(`## Targets`);
    out();
    table(
      ['target', 'goal', 'measured', 'met'],
      targets.map((t) => [t.name, t.goal, t.measured, t.met ? 'yes' : '**no**']),
    );
    const missed = targets.filter((t) => !t.met && t.profile !== undefined);
    const profiled = new Set<string>();
    if (!flags['no-profile']) {
      for (const target of missed) {
        const profile = target.profile;
        if (profile === undefined) continue;
        const key = `${profile.spec.label} ${profile.payloads.map((p) => p.name).join()}`;
        if (profiled.has(key) || profiled.size >= 4) continue;
        profiled.add(key);
        const profileDir = join(dir, `profile-${profiled.size}`);
        mkdirSync(profileDir);
        const server = await start({ ...profile.spec, label: `${profile.spec.label} under --cpu-prof`, cpuProfileDir: profileDir });
        await check(server, profile.payloads);
        await measure(server, profile.payloads, profile.connections, plan.profileSeconds, plan.warmup);
        await stop(server);
        const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
        out(
          `## CPU profile: ${profile.spec.label}, ${profile.payloads.length === 1 ? (profile.payloads[0]?.name ?? '') : 'mix'}, ${profile.connections} connections (missed: ${target.name})`,
        );
        out();
        if (file === undefined) {
          out('No profile was written (the server did not exit cleanly).');
          out();
          continue;
        }
        printProfile(summarizeProfile(join(profileDir, file)));
      }
    }
    const load1 = loadavg();
    out(
      `Load average at the end: ${load1.map((n) => n.toFixed(2)).join(' ')}; run took ${((Date.now() - started.getTime()) / 1000).toFixed(0)} s.`,
    );
  } finally {
    for (const server of running) await server.stop();
    await load.close();
    rmSync(dir, { recursive: true, force: true });
  }
  // Sections measured by hand (or by a test) stay: everything from the kept-by-hand marker on.
  const resultsFile = join(root, 'bench', 'RESULTS.md');
  const previous = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '';
  const kept = previous.indexOf(keptByHandMarker);
  writeFileSync(resultsFile, `${lines.join('\n')}\n${kept === -1 ? '' : `\n${previous.slice(kept)}`}`);
  note('wrote bench/RESULTS.md');
}

function printProfile(summary: ProfileSummary): void {
  out(`Busy time sampled: ${(summary.busyMs / 1000).toFixed(1)} s. Top functions by self time:`);
  out();
  table(
    ['self', 'function', 'where'],
    summary.functions.map((f) => [fmt.pct(f.share), `\`${f.name}\``, f.where === '' ? '(native)' : `\`${f.where}\``]),
  );
  out('Self time by where the code lives:');
  out();
  table(
    ['self', 'area'],
    summary.areas.map((a) => [fmt.pct(a.share), a.name]),
  );
  out("tolerator's own functions (dist/) by inclusive time (with everything they call):");
  out();
  table(
    ['inclusive', 'function', 'where'],
    summary.stages.map((f) => [fmt.pct(f.share), `\`${f.name}\``, `\`${f.where}\``]),
  );
}

await main();

/**
 * The server of `--baseline DIR`: tolerator as built in another checkout, with this run's
 * flags, labelled with that checkout's commit. Its dist/ must exist: building it here would
 * compile an older tree with this one's toolchain.
 */
function baselineServer(dir: string, tolerator: (label: string, extra?: Partial<ServerSpec>) => ServerSpec): ServerSpec {
  return tolerator(`baseline: tolerator at ${baselineCommit(dir)} (log warn)`, { main: baselineMain(dir) });
}

/** `--baseline DIR`'s built entry point. */
function baselineMain(dir: string): string {
  const main = join(dir, 'dist', 'main.js');
  if (!existsSync(main)) {
    throw new Error(`--baseline ${dir}: no dist/main.js there; run npm ci && npm run build in that checkout first`);
  }
  return main;
}

function baselineCommit(dir: string): string {
  return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
}
