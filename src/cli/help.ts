import {CommandHelp, Help, type Command} from '@oclif/core';
import {EXIT_CODES_HELP} from './exit-codes.js';

/**
 * Summaries for plugin commands that ship none (@oclif/plugin-version's `version`), so that
 * `ax --help` describes every command it lists.
 */
const PLUGIN_SUMMARIES: Readonly<Record<string, string>> = {
  version: 'Print the version of ax, its platform and Node.js version (--verbose: also the operating system and the plugins).',
};

/** `c` with its fallback summary when it has neither a summary nor a description. */
function described(c: Command.Loadable): Command.Loadable {
  const fallback = PLUGIN_SUMMARIES[c.id];
  return fallback !== undefined && !c.summary && !c.description ? {...c, summary: fallback} : c;
}

/** Every ax command's help ends with the EXIT CODES section; plugin commands (version, autocomplete) keep theirs. */
class AxCommandHelp extends CommandHelp {
  protected override sections(): ReturnType<CommandHelp['sections']> {
    const sections = super.sections();
    if (this.command.pluginName !== this.config.name) return sections;
    return [...sections, {header: 'EXIT CODES', generate: () => this.wrap(EXIT_CODES_HELP)}];
  }
}

/** The help class of the ax CLI (package.json `oclif.helpClass`). */
export default class AxHelp extends Help {
  protected override CommandHelpClass = AxCommandHelp;

  protected override summary(c: Command.Loadable): string | undefined {
    return super.summary(described(c));
  }

  override async showCommandHelp(command: Command.Loadable): Promise<void> {
    return super.showCommandHelp(described(command));
  }
}
