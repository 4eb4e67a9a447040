/**
 * Run by test/cluster/reaper.test.ts as the "test process" whose death the reaper watches: starts
 * a reaper, two `sleep` processes and a temporary folder, registers them as argv[2] says, prints
 * one JSON line `{"reaper", "watched", "forgotten", "dir"}` and then waits to be killed, or, with
 * `close`, closes the reaper cleanly and waits.
 *
 * - `watched`: a process registered with watch();
 * - `forgotten`: one registered and then reported exited() (as if its PID had been reused);
 * - `dir`: a folder registered with removeOnDeath().
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startReaper } from '../cluster/reaper.js';

const mode = process.argv[2] ?? 'die';
const reaper = startReaper();
// 600 s: longer than the test can take, so only a kill ends them early.
const watched = spawn('sleep', ['600'], { stdio: 'ignore', detached: true });
const forgotten = spawn('sleep', ['600'], { stdio: 'ignore', detached: true });
// Neither may keep this process alive once it is told to end; its test kills them afterwards.
watched.unref();
forgotten.unref();
const dir = mkdtempSync(join(tmpdir(), 'tolerator-reaper-'));
reaper.watch(watched.pid!);
reaper.watch(forgotten.pid!);
reaper.exited(forgotten.pid!);
reaper.removeOnDeath(dir);
if (mode === 'close') reaper.close();
console.log(JSON.stringify({ reaper: reaper.pid, watched: watched.pid, forgotten: forgotten.pid, dir }));
// Waits for the test's kill; an interval keeps the event loop alive (the reaper is unref'd).
setInterval(() => undefined, 60_000);
