/** `npm run docs:cli`: prints docs/cli.md (src/cli/reference.ts makes it). */
import { cliReference } from '../src/cli/reference.js';

process.stdout.write(await cliReference());
