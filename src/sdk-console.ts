/**
 * The console embedded in a service of the user's (the SDK's side of `ax web`): the same server,
 * configured the same way (file, env, overrides), on its own long-lived admin service, closed with
 * the server. The web server's modules (Fastify) load at the first call only.
 */
import {createRuntime, type ConnectOptions, openAdmin} from './compose.js';
import {loadConfig} from './core/config/config.js';
import type {WebServer} from './web/server.js';

export interface ConsoleOptions extends ConnectOptions {
  /** Override AX_WEB_HOST / AX_WEB_PORT. */
  host?: string;
  port?: number;
}

/**
 * Starts the console and HTTP API (see `ax web`) and resolves when it listens; `close()` stops it
 * and closes its connections. Throws invalid_input for a bad configuration (a non-loopback host
 * without AX_WEB_TOKENS), and the listen error (EADDRINUSE) as it is.
 */
export async function startConsole(opts: ConsoleOptions = {}): Promise<WebServer> {
  const {host, port, logger, ...load} = opts;
  const rt = createRuntime(loadConfig(load), logger);
  const admin = openAdmin(rt, {}, {longLived: true});
  try {
    // Loaded here, not by `import … from 'ax-executor'`: a producer never pays for the HTTP server.
    const {startConsole: start} = await import('./web/console.js');
    const server = await start(rt, admin, {
      ...(host === undefined ? {} : {host}),
      ...(port === undefined ? {} : {port}),
    });
    return {
      url: server.url,
      app: server.app,
      close: async () => {
        await server.close();
        await admin.close();
      },
    };
  } catch (e) {
    await admin.close();
    throw e;
  }
}
