/**
 * The servers under test, as child processes pinned to one core: tolerator as production starts
 * it (`node --enable-experimental-regexp-engine-on-excessive-backtracks dist/main.js serve …`) and
 * the floor (bench/floor-server.ts). Also what the bench reads about them from /proc: resident
 * memory (VmRSS) and CPU time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Payload } from './payloads.js';
import { inCgroup, type MemoryCgroup } from './memory-cgroup.js';

export const serverCore = '0';
export const loadCore = '1';

export interface Certificate {
  readonly ca: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export interface ServerSpec {
  readonly label: string;
  /** More flags for `tolerator serve` (`--review-workers 0`). */
  readonly serveArgs?: readonly string[];
  readonly kind: 'tolerator' | 'floor' | 'express-floor';
  readonly logLevel?: 'info' | 'warn';
  readonly policiesDir?: string;
  readonly clusterStateFile?: string;
  /** A kubeconfig to watch Namespaces and Nodes through (`--kubeconfig`): the informers, not a file. */
  readonly kubeconfig?: string;
  /** More flags for node itself (V8's), before the script. */
  readonly nodeFlags?: readonly string[];
  /** Write a V8 CPU profile into this directory when the server exits. */
  readonly cpuProfileDir?: string;
  /**
   * Run node with --trace-gc and keep the heap sizes it prints at each collection (RunningServer
   * `gcEvents`): the heap only shrinks at a collection, so the largest size before one is the
   * largest the heap reached. A flag of the process, nothing in the server's code.
   */
  readonly traceGc?: boolean;
  /**
   * `taskset -c` list for the server; default serverCore (core 0, the load generator has core 1).
   * 'all': no pinning, for what a server does with every core the machine has (bench/starvation.ts).
   */
  readonly cores?: string;
  /** Run the server inside this memory cgroup (bench/memory-cgroup.ts): the Deployment's limit. */
  readonly memoryCgroup?: MemoryCgroup;
  /** The entry point a tolerator server runs, from the repository's root: dist/main.js, or another build's to compare two in one run. */
  readonly main?: string;
}

/** One line of --trace-gc: heap in use before and after a collection, MB (10^6 bytes, as V8 prints them). */
export interface GcEvent {
  /** performance.now() of the bench when the line was read. */
  readonly at: number;
  /** The isolate V8 printed (`0x…`): the main thread's or a review worker's, each with a heap of its own. */
  readonly isolate: string;
  readonly kind: string;
  readonly beforeMb: number;
  readonly afterMb: number;
}

export interface RunningServer {
  readonly spec: ServerSpec;
  readonly pid: number;
  readonly port: number;
  readonly url: string;
  /** Milliseconds from spawn to the first successful /readyz (or /healthz for the floor). */
  readonly startupMs: number;
  /** With `traceGc`: every collection so far. */
  readonly gcEvents: readonly GcEvent[];
  stop(): Promise<void>;
}

const root = new URL('..', import.meta.url).pathname;

/** An unused port on 127.0.0.1, found by letting the kernel pick one. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => {
        resolve(port);
      });
    });
  });
}

/** The environment without any way to find a cluster, so `--cluster-state` is what serves. */
function serverEnvironment(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.KUBECONFIG;
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.KUBERNETES_SERVICE_PORT;
  delete env.NODE_OPTIONS;
  return env;
}

export function commandFor(spec: ServerSpec, port: number, certificate: Certificate): string[] {
  const node = [process.execPath, '--enable-experimental-regexp-engine-on-excessive-backtracks'];
  if (spec.cpuProfileDir !== undefined) node.push('--cpu-prof', '--cpu-prof-dir', spec.cpuProfileDir);
  if (spec.traceGc === true) node.push('--trace-gc');
  node.push(...(spec.nodeFlags ?? []));
  const tls = [
    '--port',
    String(port),
    '--bind-address',
    '127.0.0.1',
    '--tls-cert-file',
    certificate.certFile,
    '--tls-private-key-file',
    certificate.keyFile,
  ];
  if (spec.kind !== 'tolerator') {
    return [...node, '--import', 'tsx', 'bench/floor-server.ts', ...tls, ...(spec.kind === 'express-floor' ? ['--express'] : [])];
  }
  return [
    ...node,
    spec.main ?? 'dist/main.js',
    'serve',
    ...tls,
    '--log-level',
    spec.logLevel ?? 'warn',
    ...(spec.policiesDir === undefined ? [] : ['--policies', spec.policiesDir]),
    ...(spec.clusterStateFile === undefined ? [] : ['--cluster-state', spec.clusterStateFile]),
    ...(spec.kubeconfig === undefined ? [] : ['--kubeconfig', spec.kubeconfig]),
    // Stop at once when the bench is done (the delay exists for endpoint removal in a cluster).
    '--shutdown-delay',
    '0',
    '--shutdown-grace',
    '2',
    ...(spec.serveArgs ?? []),
  ];
}

export async function startServer(spec: ServerSpec, certificate: Certificate): Promise<RunningServer> {
  const port = await freePort();
  const started = performance.now();
  // Standard output (one JSON log line per review at info) goes to /dev/null, as cheap for the
  // server as a pipe a container runtime drains; standard error is kept for failures. With
  // traceGc, standard output is read for V8's lines (the server then logs at warn: nothing else).
  const command = commandFor(spec, port, certificate);
  const pinned = spec.cores === 'all' ? command : ['taskset', '-c', spec.cores ?? serverCore, ...command];
  const confined = spec.memoryCgroup === undefined ? pinned : inCgroup(spec.memoryCgroup, pinned);
  const child = spawn(confined[0] ?? 'taskset', confined.slice(1), {
    cwd: root,
    env: serverEnvironment(),
    stdio: ['ignore', spec.traceGc === true ? 'pipe' : 'ignore', 'pipe'],
  });
  const gcEvents: GcEvent[] = [];
  if (spec.traceGc === true && child.stdout !== null) {
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      let newline;
      while ((newline = pending.indexOf('\n')) !== -1) {
        const event = parseGcLine(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
        if (event !== undefined) gcEvents.push(event);
      }
    });
  }
  let stderr = '';
  // Piped above (the stdio list is not a literal, so the type cannot say so).
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8000);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      resolve(code);
    }),
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${spec.label}: could not start`);

  const deadline = performance.now() + 60_000;
  const readyPath = spec.kind === 'tolerator' ? '/readyz' : '/healthz';
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`${spec.label} exited with ${child.exitCode} before serving:\n${stderr}`);
    }
    if ((await getStatus(port, readyPath, certificate)) === 200) break;
    if (performance.now() > deadline) {
      await stopChild(child, exited);
      throw new Error(`${spec.label} not ready within 60 s:\n${stderr}`);
    }
    await sleep(50);
  }
  const startupMs = performance.now() - started;
  return {
    spec,
    pid,
    port,
    url: `https://127.0.0.1:${port}`,
    startupMs,
    gcEvents,
    stop: () => stopChild(child, exited),
  };
}

/** `[pid:0x…]  1234 ms: Mark-Compact 45.2 (60.1) -> 30.1 (62.0) MB, …` */
const gcLine = /^\[\d+:(0x[0-9a-f]+)\]\s+[\d.]+ ms: ([A-Za-z-]+(?: \(reduce\))?) ([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB/;

function parseGcLine(line: string): GcEvent | undefined {
  const match = gcLine.exec(line);
  if (match === null) return undefined;
  return { at: performance.now(), isolate: match[1] ?? '', kind: match[2] ?? '', beforeMb: Number(match[3]), afterMb: Number(match[5]) };
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timeout = sleep(15_000).then(() => 'timeout' as const);
  if ((await Promise.race([exited, timeout])) === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
}

function getStatus(port: number, path: string, certificate: Certificate): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: 'GET', ca: certificate.ca, servername: 'localhost', agent: false, timeout: 2000 },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve(res.statusCode);
        });
      },
    );
    req.on('error', () => {
      resolve(undefined);
    });
    req.on('timeout', () => {
      req.destroy();
    });
    req.end();
  });
}

export interface CheckedAnswer {
  readonly allowed: boolean;
  readonly patchOperations: number;
}

/**
 * Sends `payload` once, verifying the TLS chain against the CA, and checks the answer is an
 * AdmissionReview for the same uid with the expected `allowed`: load numbers of wrong answers
 * would be worthless.
 */
export function checkAnswer(server: RunningServer, payload: Payload, certificate: Certificate): Promise<CheckedAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: payload.path,
        method: 'POST',
        ca: certificate.ca,
        servername: 'localhost',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload.body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const where = `${server.spec.label} ${payload.path} ${payload.name}`;
          if (res.statusCode !== 200) {
            reject(new Error(`${where}: HTTP ${res.statusCode}: ${text.slice(0, 500)}`));
            return;
          }
          const answer = JSON.parse(text) as { response?: { uid?: string; allowed?: boolean; patch?: string } };
          const sent = JSON.parse(payload.body) as { request: { uid: string } };
          if (answer.response?.uid !== sent.request.uid) {
            reject(new Error(`${where}: answered uid ${String(answer.response?.uid)}, sent ${sent.request.uid}`));
            return;
          }
          const allowed = answer.response.allowed === true;
          if (server.spec.kind === 'tolerator' && allowed !== payload.expectAllowed) {
            reject(new Error(`${where}: allowed ${allowed}, expected ${payload.expectAllowed}: ${text.slice(0, 500)}`));
            return;
          }
          const patch =
            answer.response.patch === undefined
              ? []
              : (JSON.parse(Buffer.from(answer.response.patch, 'base64').toString('utf8')) as unknown[]);
          resolve({ allowed, patchOperations: patch.length });
        });
      },
    );
    req.on('error', reject);
    req.end(payload.body);
  });
}

/** Resident memory of a process in bytes (VmRSS of /proc/<pid>/status). */
export function residentBytes(pid: number): number {
  return statusBytes(pid, 'VmRSS');
}

/** The most resident memory a process has had (VmHWM), since it started or since resetPeakResident. */
export function peakResidentBytes(pid: number): number {
  return statusBytes(pid, 'VmHWM');
}

/** Sets VmHWM back to the current VmRSS (writing 5 to /proc/<pid>/clear_refs, Linux 4.0 and later). */
export function resetPeakResident(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(status);
  if (match?.[1] === undefined) throw new Error(`no ${field} for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/** The clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on every Linux architecture the bench runs on. */
const ticksPerSecond = 100;

/** User plus system CPU seconds a process has used (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces; the fields after its closing parenthesis don't.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state), so utime (14) and stime (15) are fields[11] and fields[12].
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}
