/**
 * `tolerator serve` as a child process, the way the tests that need a real process (signals,
 * TLS as the API server sees it, several connections at once) start it: from the sources through
 * tsx, with the regexp flag `npm start` uses, on a free port of the loopback address.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpsRequest, type Agent } from 'node:https';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export function spawnServe(args: readonly string[]): ChildProcessWithoutNullStreams {
  return spawn(
    process.execPath,
    [
      '--enable-experimental-regexp-engine-on-excessive-backtracks',
      '--import',
      'tsx',
      'src/main.ts',
      'serve',
      '--port',
      '0',
      '--bind-address',
      '127.0.0.1',
      ...args,
    ],
    { cwd: root, stdio: 'pipe' },
  );
}

/**
 * One HTTPS call to a served tolerator on the loopback address: a GET, or a POST of `body` as
 * JSON. The caller's agent decides keep-alive and trust (the development certificate is
 * self-signed for localhost).
 */
export function callServe(agent: Agent, port: number, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        agent,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A running `tolerator serve` child, the port it serves on, and every log line it has written so far. */
export interface ServedProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly port: number;
  readonly logs: Record<string, unknown>[];
}

/**
 * How long startServe waits for `tolerator serving`: 120 s. It is a hang detector, not a speed
 * test, so it must not fire on a machine that is merely busy.
 *
 * What it waits for: node starting, tsx loading the sources (in the main thread and again in each
 * review worker), the certificate files, and with --kubeconfig the informers' first lists and
 * the first GET /metrics through kube-apiserver. Measured with the development certificate and
 * no cluster, at a load average of 2.5 on 2 cores: 1.3 s wall and 1.7 s of CPU with tsx's cache
 * warm, 2.9 s wall and 2.3 s of CPU (plus esbuild's own) with it cold.
 *
 * Under a load average L on C cores a CPU-bound process gets about C / (L + 1) of a core: at the
 * load of 30 seen on a shared 2-core machine running several control planes, 1/15.5 of a core,
 * so the warm start takes about 26 s and the cold one about 45 s, before kube-apiserver's own
 * answers, which the same load slows. The former 30 s deadline failed there. 120 s covers a cold
 * start at load 30 with a margin of 2.5 (a warm one up to a load of about 140), and a start that
 * never comes is still reported within 2 minutes, with the CPU it used and the load, so the
 * failure says whether the child was starved or stuck. The e2e hooks that start tolerator stay
 * within node's --test-timeout with it (test/cluster/run-suite.ts adds up the deadlines).
 */
export const serveStartDeadlineMs = 120_000;

/** The CPU time `pid` has used (all its threads), from /proc: undefined where there is no /proc. */
function cpuSecondsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // /proc/PID/stat: fields 14 and 15 (utime, stime) in clock ticks, counted after the `)` that
    // ends the command name (which may itself hold spaces). USER_HZ is 100 on every Linux ABI.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * Starts `tolerator serve` with `args` and resolves once it logs the port it serves on. Its stdout
 * is read to the end (every review logs a line: an unread pipe would fill and block the server),
 * each line kept in `logs`; stderr is drained.
 */
export function startServe(args: readonly string[]): Promise<ServedProcess> {
  const child = spawnServe(args);
  const logs: Record<string, unknown>[] = [];
  let buffered = '';
  child.stderr.resume();
  return new Promise<ServedProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      const cpu = cpuSecondsOf(child.pid);
      // Not left running: its pipes would keep the test file's process alive for ever.
      child.kill('SIGKILL');
      const used = cpu === undefined ? 'its CPU time unknown' : `having used ${cpu.toFixed(1)} s of CPU`;
      const load = `load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cores`;
      reject(new Error(`serve did not start within ${serveStartDeadlineMs / 1000} s (${used}; ${load}): ${JSON.stringify(logs)}`));
    }, serveStartDeadlineMs);
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const entry = JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>;
        buffered = buffered.slice(newline + 1);
        logs.push(entry);
        if (entry.msg === 'tolerator serving' && typeof entry.port === 'number') {
          clearTimeout(timer);
          resolve({ child, port: entry.port, logs });
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}`));
    });
  });
}
