/**
 * `tolerator completion bash|zsh|fish`: a shell completion script made from the program's own
 * list of commands and flags, so it never falls behind them. The scripts are static (no call back
 * into tolerator while typing): commands, each command's flags, the values of flags that take one
 * of a few (`-o`, `--webhook`, `--log-level`), and file names elsewhere.
 */
import type { CommandDefinition, CommandIo } from './command.js';
import type { FlagSpec, ParsedFlags } from './flags.js';

export const shells = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof shells)[number];

interface CompletedFlag {
  readonly long: string;
  readonly short?: string;
  readonly takesValue: boolean;
  readonly choices?: readonly string[];
  readonly help: string;
}

function flagsOf(command: CommandDefinition): CompletedFlag[] {
  const flags = Object.entries(command.flags).map(([name, spec]: [string, FlagSpec]) => ({
    long: name,
    ...(spec.short === undefined ? {} : { short: spec.short }),
    takesValue: spec.kind !== 'boolean',
    ...(spec.choices === undefined ? {} : { choices: spec.choices }),
    help: spec.help,
  }));
  return [...flags, { long: 'help', short: 'h', takesValue: false, help: 'show the help of the command' }];
}

/** A shell word in single quotes (the only quoting all three shells read alike). */
function quoted(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** fish descriptions: one line, without the sentence after the first semicolon or parenthesis. */
function shortHelp(text: string): string {
  return (text.split(/[;(]/, 1)[0] ?? '').trim().slice(0, 80);
}

export function completionScript(shell: Shell, program: string, commands: readonly CommandDefinition[]): string {
  const names = [...commands.map((command) => command.name), 'help'];
  if (shell === 'fish') return fishScript(program, names, commands);
  const cases = commands.map((command) => {
    const flags = flagsOf(command);
    const words = flags.flatMap((flag) => [`--${flag.long}`, ...(flag.short === undefined ? [] : [`-${flag.short}`])]);
    const valued = flags.filter((flag) => flag.takesValue);
    const choiceCases = valued
      .filter((flag) => flag.choices !== undefined)
      .map(
        (flag) =>
          `        ${[`--${flag.long}`, ...(flag.short === undefined ? [] : [`-${flag.short}`])].join('|')}) COMPREPLY=($(compgen -W ${quoted((flag.choices ?? []).join(' '))} -- "$cur")); return ;;`,
      );
    const fileFlags = valued.filter((flag) => flag.choices === undefined).map((flag) => `--${flag.long}`);
    return [
      `    ${command.name})`,
      '      case "$prev" in',
      ...choiceCases,
      ...(fileFlags.length === 0 ? [] : [`        ${fileFlags.join('|')}) COMPREPLY=($(compgen -f -- "$cur")); return ;;`]),
      '      esac',
      `      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W ${quoted(words.join(' '))} -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi`,
      '      ;;',
    ].join('\n');
  });
  const fn = `_${program.replace(/[^A-Za-z0-9]/g, '_')}_completion`;
  const bash = [
    `${fn}() {`,
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" command="" i',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    if [[ "${COMP_WORDS[i]}" != -* ]]; then command="${COMP_WORDS[i]}"; break; fi',
    '  done',
    '  if [[ -z "$command" ]]; then',
    `    COMPREPLY=($(compgen -W ${quoted([...names, '--help', '--version'].join(' '))} -- "$cur"))`,
    '    return',
    '  fi',
    '  case "$command" in',
    ...cases,
    `    help) COMPREPLY=($(compgen -W ${quoted(names.join(' '))} -- "$cur")) ;;`,
    '  esac',
    '}',
    `complete -o filenames -F ${fn} ${program}`,
  ];
  if (shell === 'bash') {
    return [`# bash completion for ${program}: source <(${program} completion bash)`, ...bash, ''].join('\n');
  }
  // zsh reads the bash function through bashcompinit, which ships with zsh.
  return [
    `#compdef ${program}`,
    `# zsh completion for ${program}: source <(${program} completion zsh)`,
    'autoload -U +X bashcompinit && bashcompinit',
    ...bash,
    '',
  ].join('\n');
}

function fishScript(program: string, names: readonly string[], commands: readonly CommandDefinition[]): string {
  const lines = [`# fish completion for ${program}: ${program} completion fish | source`, `complete -c ${program} -f`];
  lines.push(`complete -c ${program} -n __fish_use_subcommand -l version -d 'print the version'`);
  for (const command of commands) {
    lines.push(`complete -c ${program} -n __fish_use_subcommand -a ${command.name} -d ${quoted(shortHelp(command.summary))}`);
  }
  lines.push(`complete -c ${program} -n __fish_use_subcommand -a help -d 'show the help of a command'`);
  lines.push(`complete -c ${program} -n '__fish_seen_subcommand_from help' -a ${quoted(names.join(' '))}`);
  for (const command of commands) {
    for (const flag of flagsOf(command)) {
      const parts = [`complete -c ${program} -n '__fish_seen_subcommand_from ${command.name}' -l ${flag.long}`];
      if (flag.short !== undefined) parts.push(`-s ${flag.short}`);
      if (flag.choices !== undefined) parts.push(`-x -a ${quoted(flag.choices.join(' '))}`);
      else if (flag.takesValue) parts.push('-r -F');
      parts.push(`-d ${quoted(shortHelp(flag.help))}`);
      lines.push(parts.join(' '));
    }
    if (command.arguments !== undefined) lines.push(`complete -c ${program} -n '__fish_seen_subcommand_from ${command.name}' -F`);
  }
  return `${lines.join('\n')}\n`;
}

/** The command; it is given the program's commands (src/cli/program.ts), which include itself. */
export function completionCommand(commands: () => readonly CommandDefinition[], program = 'tolerator'): CommandDefinition {
  return {
    name: 'completion',
    summary: 'print a shell completion script: bash, zsh or fish',
    arguments: [['<shell>', 'bash, zsh or fish']],
    flags: {},
    outcomes: { ok: 'the script was printed' },
    details: [
      'Load it for the current shell, or install it:',
      `  bash: source <(${program} completion bash)      or write it to /etc/bash_completion.d/${program}`,
      `  zsh:  source <(${program} completion zsh)       or write it as _${program} to a directory on $fpath`,
      `  fish: ${program} completion fish | source       or write it to ~/.config/fish/completions/${program}.fish`,
    ].join('\n'),
    run: (flags: ParsedFlags, io: CommandIo) => {
      const shell = flags.positionals[0] ?? '';
      if (!(shells as readonly string[]).includes(shell)) {
        throw new Error(`completion: unknown shell ${JSON.stringify(shell)}; give one of ${shells.join(', ')}`);
      }
      io.stdout(completionScript(shell as Shell, program, commands()));
      return Promise.resolve(0);
    },
  };
}
