import type {Hook} from '@oclif/core';
import {toConfiguredId} from '@oclif/core';
import {createInterface} from 'node:readline/promises';
import {printable} from '../render.js';
import {closestCommand} from '../suggest.js';

/**
 * `ax submti`: on a terminal, asks "Did you mean `ax submit`? [y/N]" and runs it on yes (exit 127
 * on no). Elsewhere (scripts, CI, pipes) nothing is asked: the hook names the nearest command and
 * exits 127, like a shell's "command not found". With arguments (`ax dlq replya
 * <id>`, `ax submti x`) the suggestion keeps them and nothing is run, on a terminal too: a guess
 * is never run with the operator's arguments. Extra words after a known command are an unexpected
 * argument (exit 2, a usage error).
 */
const hook: Hook.CommandNotFound = async function (opts) {
  // `ax tasks stats extra` is a known command with an argument too many, not a typo: usage error.
  const owner = opts.config.commands.find((c) => opts.id.startsWith(`${c.id}:`));
  if (owner !== undefined) {
    const extra = opts.id.slice(owner.id.length + 1).split(':');
    this.error(`Unexpected argument: ${extra.join(' ')}. See \`${opts.config.bin} ${toConfiguredId(owner.id, opts.config)} --help\`.`, {
      exit: 2,
    });
  }
  const ids = opts.config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases]);
  const near = closestCommand(opts.id, ids);
  const withArgs = near !== undefined && near.args.length > 0;
  const bin = opts.config.bin;
  if (near !== undefined && !withArgs && process.stdin.isTTY === true && process.stderr.isTTY === true) {
    const rl = createInterface({input: process.stdin, output: process.stderr});
    let answer = '';
    try {
      answer = await rl.question(
        `${printable(toConfiguredId(opts.id, opts.config))} is not an ${bin} command. Did you mean \`${printable(`${bin} ${toConfiguredId(near.id, opts.config)}`)}\`? [y/N] `,
      );
    } finally {
      rl.close();
    }
    if (/^y(es)?$/i.test(answer.trim())) return opts.config.runCommand(near.id, opts.argv ?? []);
    this.error(`Run \`${bin} help\` for the list of commands.`, {exit: 127});
  }
  const typed =
    near === undefined
      ? opts.id
      : opts.id
          .split(':')
          .slice(0, -near.args.length || undefined)
          .join(':');
  const shown = printable(toConfiguredId(typed, opts.config));
  const hint =
    near === undefined
      ? ''
      : ` Did you mean \`${printable([bin, toConfiguredId(near.id, opts.config), ...near.args, ...(opts.argv ?? [])].join(' '))}\`?`;
  this.error(`${shown} is not an ${bin} command.${hint} Run \`${bin} help\` for the list.`, {exit: 127});
};

export default hook;
