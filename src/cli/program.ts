/**
 * The program: the one list of commands, parsed by commander. Adding a command is one file that
 * exports a CommandDefinition (src/cli/command.ts) and one line in `commands` below.
 *
 * Why commander (pinned in package.json): it is the most used Node.js argument parser, has no
 * dependencies, ships its own types, and gives what a user of kubectl, kyverno or gator expects
 * without code of ours: `-h`/`--help` on every command (answered before the command runs, so
 * `serve -h` starts nothing), `--name=value` and `--name value`, `-ojson`, `--` to end the flags,
 * and "Did you mean …?" for an unknown command or flag. yargs does as much but pulls in a dozen
 * packages; node:util's parseArgs has no help, no subcommands and no suggestions.
 *
 * Exit codes come from one table (src/cli/exit-codes.ts): commander's own errors and whatever a
 * command throws pass through `exitForError` here, and nowhere else.
 */
import { Command, CommanderError } from 'commander';
import { auditCommand } from './audit.js';
import { checkCommand } from './check.js';
import { deleteWebhooksCommand } from './delete-webhooks.js';
import { completionCommand } from './completion.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { exitCodeHelp, exitCodes, exitForError } from './exit-codes.js';
import { explainCommand } from './explain.js';
import { exportCommand } from './export.js';
import { addFlags, readFlags, type ParsedFlags } from './flags.js';
import { testCommand } from './policy-test.js';
import { reviewCommand } from './review.js';
import { serveCommand } from './serve.js';
import { simulateCommand } from './simulate.js';

/** Every command, in the order `--help` lists them. */
export const commands: readonly CommandDefinition[] = [
  serveCommand,
  reviewCommand,
  explainCommand,
  simulateCommand,
  testCommand,
  auditCommand,
  checkCommand,
  exportCommand,
  deleteWebhooksCommand,
  completionCommand(() => commands),
];

/**
 * 100 columns: the help is the same on every terminal and in docs/cli.md (generated from it);
 * commander would otherwise read the terminal's width from the process.
 */
const helpWidth = 100;

export interface ProgramOptions {
  /** The name the program was run as: `tolerator`, or `kubectl tolerator` as a kubectl plugin. */
  readonly name?: string;
  /** The commands, when not the program's own (tests). */
  readonly commands?: readonly CommandDefinition[];
}

/** Builds the commander program; `onSelect` receives the command chosen and its parsed flags. */
export function buildProgram(
  io: CommandIo,
  onSelect: (command: CommandDefinition, flags: ParsedFlags) => void,
  options: ProgramOptions = {},
): Command {
  const name = options.name ?? 'tolerator';
  const program = new Command(name)
    .description('Taints and tolerations, as the Kubernetes documentation describes them, as an admission webhook and offline tools.')
    .usage('<command> [flags]')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => {
        io.stdout(text);
      },
      writeErr: (text) => {
        io.stderr(text);
      },
      getOutHelpWidth: () => helpWidth,
      getErrHelpWidth: () => helpWidth,
    })
    .configureHelp({ helpWidth })
    .showSuggestionAfterError(true)
    .showHelpAfterError(`(run "${name} --help" for usage)`)
    .helpCommand('help [command]', 'show the help of a command')
    .option('--version', 'print the version, the git commit it was built from and the Node.js version, and exit');
  program.addHelpText(
    'after',
    `\n${exitCodeHelp({ ok: 'allowed, clean or passed', found: 'denied, violations found or a case failed' })}\n`,
  );
  program.on('option:version', () => {
    const info = io.buildInfo?.() ?? { version: 'unknown', revision: 'unknown', nodeVersion: 'unknown' };
    io.stdout(`tolerator ${info.version}\ncommit: ${info.revision}\nnode: ${info.nodeVersion}\n`);
    // Commander's own way out after --version: exit code 0, nothing more to print.
    throw new CommanderError(exitCodes.ok, 'commander.version', '');
  });
  for (const definition of options.commands ?? commands) {
    const command = program
      .command(definition.name)
      .summary(definition.summary)
      .description(definition.summary)
      .showHelpAfterError(`(run "${name} ${definition.name} --help" for usage)`);
    for (const [syntax, help] of definition.arguments ?? []) command.argument(syntax, help);
    addFlags(command, definition.flags);
    command.addHelpText(
      'after',
      `${definition.details === undefined ? '' : `\n${definition.details}\n`}\n${exitCodeHelp(definition.outcomes)}\n`,
    );
    command.action((...args: unknown[]) => {
      onSelect(definition, readFlags(args.at(-1) as Command, definition.flags));
    });
  }
  return program;
}

/**
 * kubectl's `-o=json` (pflag reads `-X=value` as the value of a one-letter flag): commander would
 * take `=json` as the value, so the `=` is dropped before it parses.
 */
function shortFlagsWithEquals(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.flatMap((arg, index) => {
    const match = /^-([A-Za-z])=(.*)$/s.exec(arg);
    return match === null || (end !== -1 && index > end) ? [arg] : [`-${match[1] ?? ''}`, match[2] ?? ''];
  });
}

/** Runs the command line `argv` (without the node and script paths) and resolves with the exit code. */
export async function runCli(argv: readonly string[], io: CommandIo, options: ProgramOptions = {}): Promise<number> {
  let selected: { command: CommandDefinition; flags: ParsedFlags } | undefined;
  const program = buildProgram(
    io,
    (command, flags) => {
      selected ??= { command, flags };
    },
    options,
  );
  try {
    if (argv.length === 0) {
      program.outputHelp({ error: true });
      return exitCodes.usage;
    }
    await program.parseAsync(shortFlagsWithEquals(argv), { from: 'user' });
    if (selected === undefined) return exitCodes.usage;
    return await selected.command.run(selected.flags, io);
  } catch (error) {
    const { code, message } = exitForError(error);
    if (message !== undefined)
      io.stderr(`${options.name ?? 'tolerator'}${selected === undefined ? '' : ` ${selected.command.name}`}: ${message}\n`);
    return code;
  }
}
