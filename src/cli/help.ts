import {CommandHelp, Help} from '@oclif/core';
import {EXIT_CODES_HELP} from './exit-codes.js';

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
}
