import type {Hook} from '@oclif/core';
import {toConfiguredId} from '@oclif/core';
import notFound from '@oclif/plugin-not-found';
import {closest} from '../suggest.js';

/**
 * `ax submti`: on a terminal, @oclif/plugin-not-found asks "Did you mean submit?" and runs it on yes.
 * Elsewhere (scripts, CI, pipes) that plugin prints no suggestion, so this hook names the nearest
 * command itself and exits 127, like a shell's "command not found". Extra words after a known
 * command are an unexpected argument (exit 2, a usage error).
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
  if (process.stdin.isTTY === true && process.stderr.isTTY === true) return notFound.call(this, opts);
  const ids = opts.config.commands.filter((c) => !c.hidden).flatMap((c) => [c.id, ...c.aliases]);
  const near = closest(opts.id, ids);
  const shown = toConfiguredId(opts.id, opts.config);
  const hint = near === undefined ? '' : ` Did you mean \`${opts.config.bin} ${toConfiguredId(near, opts.config)}\`?`;
  this.error(`${shown} is not an ${opts.config.bin} command.${hint} Run \`${opts.config.bin} help\` for the list.`, {exit: 127});
};

export default hook;
