import {randomBytes} from 'node:crypto';
import {Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {newToken, ROLES} from '../../web/auth/tokens.js';

export interface WebTokenResult {
  name: string;
  role: string;
  /** Shown once: give it to its holder. */
  token: string;
  /** The AX_WEB_TOKENS entry (only the token's SHA-256). */
  entry: string;
}

export default class WebToken extends AxCommand {
  static override summary = 'Make a console/API token: prints the token (once) and its AX_WEB_TOKENS entry (its hash).';
  static override description = `A token is 32 random bytes. Give the token to its holder (a person signs in with it; a service sends it as Authorization: Bearer <token>) and add the entry to AX_WEB_TOKENS (comma-separated) of ax web: only the token's SHA-256 is kept there, so the configuration does not hold the secret. Roles: viewer (read), operator (read and act: cancel, replay, pause…), producer (submit only). Nothing is stored or contacted.

Exit codes: 2 a bad name or role.`;
  static override examples = [
    {description: 'A token for an operator', command: '<%= config.bin %> web token --name alice --role operator'},
    {description: 'A service that submits tasks over HTTP', command: '<%= config.bin %> web token --name billing --role producer --json'},
  ];
  static override flags = {
    name: Flags.string({required: true, description: 'who holds it (letters, digits, . _ -): the audit trail names them'}),
    role: Flags.string({required: true, options: [...ROLES], description: 'viewer, operator or producer'}),
    'entry-only': Flags.boolean({description: 'print only the AX_WEB_TOKENS entry (the token then goes to stderr)'}),
  };

  async run(): Promise<WebTokenResult> {
    const {flags} = await this.parse(WebToken);
    const t = newToken(flags.name, flags.role, (n) => randomBytes(n));
    if (!this.jsonEnabled()) {
      if (flags['entry-only']) {
        this.logToStderr(`token for ${flags.name} (${flags.role}), shown once: ${t.token}`);
        this.log(t.entry);
      } else {
        this.log(`token (give it to ${flags.name}; shown once): ${t.token}`);
        this.log(`AX_WEB_TOKENS entry (add it, comma-separated): ${t.entry}`);
      }
    }
    return {name: flags.name, role: flags.role, token: t.token, entry: t.entry};
  }
}
