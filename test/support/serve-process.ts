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
