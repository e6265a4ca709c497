import {Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {openAdmin} from '../cli/runtime.js';
import {waitForSignal} from '../cli/signals.js';
import {startConsole} from '../web/console.js';

export interface WebResult {
  url: string;
  signal: string;
}

export default class Web extends AxCommand {
  static override daemon = true;
  static override summary = 'Serve the Admin console in the browser and the HTTP API (/api/v1) until stopped.';
  static override description = `The console shows the cell live: counts per state, rates and the backlog over the last hour, alerts, types with their flow control, task search (by type, state, time, payload field, error text, dedup key), a task's timeline with cancel, replay and force replay, dead letters grouped by error with bulk replay (dry run, merge patch, rate, progress), cron, workers, doctor and the audit trail. The same actions are the JSON API under /api/v1 (OpenAPI document at /api/v1/openapi.json), plus POST /api/v1/tasks to submit from any language.

Listens on AX_WEB_HOST:AX_WEB_PORT (default 127.0.0.1:8080). Without AX_WEB_TOKENS there is no login and it serves loopback only; any other address needs tokens (make them with ax web token). Roles: viewer reads, operator also acts, producer only submits. Every action is audited as web:<token name>@<client address>. docs/operating/console.md has the details.

Exit codes: 2 bad configuration (a non-loopback host without tokens, a malformed AX_WEB_TOKENS), 1 the port is taken.`;
  static override examples = [
    {description: 'The console on this machine', command: '<%= config.bin %> web'},
    {description: 'On another port', command: '<%= config.bin %> web --port 9090'},
    {
      description: 'For the team, behind tokens',
      command: 'AX_WEB_TOKENS="$(ax web token --name alice --role operator --entry-only)" <%= config.bin %> web --host 0.0.0.0',
    },
  ];
  static override flags = {
    host: Flags.string({description: 'address to listen on (default AX_WEB_HOST, 127.0.0.1)'}),
    port: Flags.integer({description: 'port (default AX_WEB_PORT, 8080; 0: any free port)', min: 0, max: 65_535}),
  };

  async run(): Promise<WebResult> {
    const {flags} = await this.parse(Web);
    const rt = this.runtime(flags);
    await using admin = openAdmin(rt, {}, {longLived: true});
    const server = await startConsole(rt, admin, {
      ...(flags.host === undefined ? {} : {host: flags.host}),
      ...(flags.port === undefined ? {} : {port: flags.port}),
      version: this.config.version,
    });
    const login = rt.config.webTokens.trim() === '' ? 'no login (loopback only)' : 'sign in with a token';
    this.logToStderr(`ax web: the console is at ${server.url}/ (${login}); API at ${server.url}/api/v1. Ctrl-C stops it.`);
    const signal = await waitForSignal();
    await server.close();
    return {url: server.url, signal};
  }
}
