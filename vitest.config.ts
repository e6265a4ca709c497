import {defineConfig} from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    disableConsoleIntercept: true,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests share one MariaDB and RabbitMQ; each file uses its own database and cell,
    // but the machine has two cores: run files one at a time.
    fileParallelism: false,
    pool: 'forks',
    reporters: ['default'],
  },
});
