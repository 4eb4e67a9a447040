/**
 * For test/cluster/parent-watch.test.ts: prints its PID as a JSON line, watches its ancestors
 * (as test/cluster/launch.ts does) and, when one is gone, prints why and exits 0. It exits 3 by
 * itself after 60 s, so a watch that never fires fails the test without leaving this behind.
 */
import { watchParents } from '../cluster/parent-watch.js';

watchParents((why) => {
  console.log(JSON.stringify({ gone: why }));
  process.exit(0);
}, 100);
console.log(JSON.stringify({ pid: process.pid }));
setTimeout(() => process.exit(3), 60_000);
