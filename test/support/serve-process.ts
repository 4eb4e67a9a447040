/**
 * `tolerator serve` as a child process, the way the tests that need a real process (signals,
 * TLS as the API server sees it, several connections at once) start it: from the sources through
 * tsx, with the regexp flag `npm start` uses, on a free port of the loopback address.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request as httpsRequest, type Agent } from 'node:https';
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
      // Not left running: its pipes would keep the test file's process alive for ever.
      child.kill('SIGKILL');
      reject(new Error(`serve did not start within 30 s: ${JSON.stringify(logs)}`));
    }, 30_000);
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
