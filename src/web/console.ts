/**
 * The console as a process part: the web server over a long-lived admin service of the configured
 * cell (and the others of AX_CELLS through ?cell=), with the overview's sampler. `ax web` runs it;
 * the SDK's startConsole() embeds it in a service of the user's.
 */
import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import type {CellRuntime} from '../core/admin/context.js';
import type {Admin} from '../core/admin/service.js';
import {parseTokens} from './auth/tokens.js';
import {createOverviewProvider} from './overview.js';
import {startWebServer, type WebServer, type WebServerOptions} from './server.js';

/** Where the built UI is: dist-web/ at the package root (beside dist/ and src/). */
export const ASSETS_DIR = fileURLToPath(new URL('../../dist-web', import.meta.url));

/** The package's version (package.json beside dist/ and src/); "unknown" when it cannot be read. */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {version?: unknown};
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface ConsoleOptions {
  /** Override AX_WEB_HOST / AX_WEB_PORT. */
  host?: string;
  port?: number;
  /** Default: packageVersion(). */
  version?: string;
  /** The built UI (default ASSETS_DIR); null: the API only. */
  assetsDir?: string | null;
}

/**
 * The web server's options from `rt`'s configuration (AX_WEB_*) with `admin`; `o` overrides the
 * address, the UI's directory and the version. Tests and the bench start their servers from these
 * too, changing only what they must. Throws invalid_input for a bad AX_WEB_TOKENS.
 */
export function consoleOptions(rt: CellRuntime, admin: Admin, o: ConsoleOptions = {}): WebServerOptions {
  const c = rt.config;
  let localName: string;
  try {
    localName = rt.operator();
  } catch {
    localName = 'local';
  }
  return {
    admin,
    cells: [c.cell, ...rt.cells.names.filter((x) => x !== c.cell)],
    host: o.host ?? c.webHost,
    port: o.port ?? c.webPort,
    tokens: parseTokens(c.webTokens),
    sessionTtlMs: c.webSessionTtlMs,
    bodyLimitBytes: c.webBodyLimitBytes,
    secureCookies: c.webSecureCookies,
    assetsDir: o.assetsDir === undefined ? ASSETS_DIR : o.assetsDir,
    version: o.version ?? packageVersion(),
    localName,
    overview: createOverviewProvider({clock: rt.clock}),
    clock: rt.clock,
    logger: rt.logger,
  };
}

/**
 * Starts the console on `rt`'s configuration with `admin` (owned by the caller, who closes it after
 * the server). Throws invalid_input for a bad AX_WEB_TOKENS or a non-loopback host without tokens,
 * and the listen error (EADDRINUSE: the port is taken) as it is.
 */
export function startConsole(rt: CellRuntime, admin: Admin, o: ConsoleOptions = {}): Promise<WebServer> {
  return startWebServer(consoleOptions(rt, admin, o));
}
