// ESLint (flat config) with typescript-eslint. Beyond the recommended rules, this file enforces the
// dependency rules of the architecture (shared/design/architecture.md, "Layout"):
// - src/core never imports commands, cli, ui, sidecar, oclif, ink or react;
// - src/core/config never imports the MySQL/AMQP adapters (they depend on it, not the reverse);
// - commands never open a store, broker, outbox or schema: they call the admin service or the daemon host;
// - services (and src/core/client.ts, cron) see only the store and broker interfaces, not the MySQL/AMQP
//   adapters; commands and src/cli do not import adapters either: only the composition root
//   src/compose.ts (and sidecar/, through src/relay.ts) creates them;
// - each driver package is imported in one place;
// - Ink and React are imported under src/ui/ only; Fastify under src/web/ only;
// - core code takes time and randomness injected (no Date.now, Math.random, setTimeout);
// - no focused or skipped tests;
// - no import cycles under src/ (import-x/no-cycle; it follows value imports only, so
//   test/unit/import-cycles.test.ts checks the graph with the type-only imports as well).
import {createNodeResolver, importX} from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

const DRIVERS = {
  mysql2: 'src/core/store/mysql/db.ts',
  amqplib: 'src/core/broker/amqp/broker.ts',
  'p-limit': 'src/core/worker/io-pool.ts',
  'cron-parser': 'src/core/cron/parse.ts',
  pino: 'src/core/log.ts',
  'pino-pretty': 'src/core/log.ts',
  'prom-client': 'src/core/metrics/registry.ts',
  '@opentelemetry/api': 'src/core/trace.ts',
};
// Ink and React are the TUI's drivers: imported under src/ui/ only (commands load it lazily).
const UI_ONLY = {
  group: ['ink', 'ink/*', 'ink-*', 'react', 'react/*', 'react-dom'],
  message: 'Ink and React are imported only under src/ui/',
};
// The HTTP framework is the console's driver: imported under src/web/ only.
const WEB_ONLY = {group: ['fastify', 'fastify/*', '@fastify/*'], message: 'Fastify is imported only under src/web/ (the console server)'};
const driverPattern = (name) => ({group: [name, `${name}/*`], message: `${name} is imported only in ${DRIVERS[name]}`});
const CORE_FORBIDDEN = [
  {
    group: ['**/commands/*', '**/cli/*', '**/ui/*', '**/web/*', '**/sidecar/*', '**/compose.js'],
    message: 'src/core must not depend on commands, cli, ui, web, sidecar or the composition root',
  },
  {group: ['@oclif/*', 'ink', 'ink-*', 'react', 'react/*'], message: 'src/core knows nothing of oclif, Ink or React'},
];
const ADAPTERS = {
  group: ['**/store/mysql/*', '**/broker/amqp/*'],
  message: 'services and commands see only the store and Broker interfaces (core/store/types.ts); adapters are created in src/compose.ts',
};

const OPENERS = {
  group: ['**/cli/runtime.js', '**/compose.js'],
  importNames: ['openStore', 'openBroker', 'openOutbox', 'openSchema', 'openClient', 'openDatabase'],
  message: 'commands go through the admin service (this.admin(flags)) or the daemon host; they never open a server themselves',
};
/** no-restricted-imports for a file: core rules (if in core), adapter rule (if a service), drivers except its own (a list). */
function imports({core = false, service = false, allowDriver, ui = false, web = false, extra = []} = {}) {
  const patterns = [
    ...(core ? CORE_FORBIDDEN : []),
    ...(service ? [ADAPTERS] : []),
    ...(core || ui ? [] : [UI_ONLY]),
    ...(web ? [] : [WEB_ONLY]),
    ...extra,
  ];
  for (const name of Object.keys(DRIVERS)) if (!allowDriver?.includes(name)) patterns.push(driverPattern(name));
  return ['error', {patterns}];
}

export default tseslint.config(
  {ignores: ['dist/**', 'dist-web/**', 'node_modules/**', 'bench/results/**', 'coverage/**']},
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_'}],
      '@typescript-eslint/consistent-type-imports': ['error', {fixStyle: 'inline-type-imports'}],
      'no-restricted-imports': imports(),
    },
  },
  {files: ['src/core/**/*.ts'], rules: {'no-restricted-imports': imports({core: true})}},
  {
    files: [
      'src/core/{producer,worker,reconcile,inspect,scheduler,outbox,dlq,metrics,cron,types,archive,doctor,admin}/**/*.ts',
      'src/core/client.ts',
    ],
    rules: {'no-restricted-imports': imports({core: true, service: true})},
  },
  {
    // Configuration is below the adapters: they read it, it never imports them.
    files: ['src/core/config/**/*.ts'],
    rules: {'no-restricted-imports': imports({core: true, service: true})},
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: {'no-restricted-imports': imports({service: true})},
  },
  {
    // Commands parse, call the admin service (or the daemon host) once, and render: none opens a
    // store, broker, outbox or schema itself (core/admin/service.ts does, at first use).
    files: ['src/commands/**/*.ts'],
    rules: {'no-restricted-imports': imports({service: true, extra: [OPENERS]})},
  },
  {
    files: ['src/ui/**/*.{ts,tsx}'],
    rules: {'no-restricted-imports': imports({service: true, ui: true})},
  },
  {
    // The console server: a thin caller of the admin service, like a command; Fastify lives here.
    files: ['src/web/**/*.ts'],
    rules: {'no-restricted-imports': imports({service: true, web: true})},
  },
  ...[...new Set(Object.values(DRIVERS))].map((file) => ({
    files: [file],
    rules: {
      'no-restricted-imports': imports({
        core: file.startsWith('src/core/'),
        allowDriver: Object.keys(DRIVERS).filter((name) => DRIVERS[name] === file),
      }),
    },
  })),
  {
    files: ['src/core/**/*.ts'],
    ignores: ['src/core/time.ts', 'src/core/worker/cpu-thread.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {object: 'Date', property: 'now', message: 'inject a Clock (src/core/time.ts)'},
        {object: 'Math', property: 'random', message: 'inject a Random (src/core/time.ts)'},
      ],
      'no-restricted-globals': [
        'error',
        {name: 'setTimeout', message: 'use clock.setTimeout'},
        {name: 'setInterval', message: 'use clock.setTimeout'},
      ],
    },
  },
  {
    // Sources import each other as './x.js' (NodeNext): resolve that to the .ts/.tsx beside it.
    files: ['src/**/*.{ts,tsx}'],
    plugins: {'import-x': importX},
    settings: {
      'import-x/extensions': ['.ts', '.tsx', '.js'],
      'import-x/parsers': {'@typescript-eslint/parser': ['.ts', '.tsx']},
      'import-x/resolver-next': [
        createNodeResolver({extensions: ['.ts', '.tsx', '.js', '.json'], extensionAlias: {'.js': ['.ts', '.tsx', '.js']}}),
      ],
    },
    rules: {'import-x/no-cycle': 'error'},
  },
  {
    // The browser console (ui/, built by Vite into dist-web/): React in the browser, and never the
    // server's code (it would pull Node modules into the bundle); the API's shapes are in ui/src/types.ts.
    // Browser globals need no list: TypeScript checks names (ui/tsconfig.json has the DOM libs).
    files: ['ui/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', {patterns: [{group: ['**/src/*', '**/src/**'], message: 'the console imports no server code'}]}],
    },
  },
  {
    files: ['test/**/*.ts', 'test/**/*.js'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-restricted-imports': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector: 'CallExpression[callee.object.name=/^(it|test|describe)$/][callee.property.name=/^(only|skip|todo)$/]',
          message: 'no focused or skipped tests',
        },
      ],
    },
  },
  {
    files: ['**/*.js', 'scripts/**', 'bench/**', 'examples/**', 'bin/**'],
    rules: {'no-restricted-imports': 'off', '@typescript-eslint/no-unused-vars': 'off'},
  },
);
