// The environment manifest printed at the top of every report: versions, durability settings,
// the disk's fsync rate, the machine and the commit, so numbers can be compared honestly.
import {execFileSync} from 'node:child_process';
import {closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync} from 'node:fs';
import os from 'node:os';
import {join} from 'node:path';

function git(args, cwd) {
  try {
    return execFileSync('git', args, {cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}).trim();
  } catch {
    return null;
  }
}

/** 200 × (4 KiB write + fsync) on a temp file: what one durable commit costs this disk at best. */
export function fsyncRate(count = 200) {
  const dir = mkdtempSync(join(os.tmpdir(), 'ax-bench-fsync-'));
  const file = join(dir, 'probe');
  const buf = Buffer.alloc(4096, 7);
  const fd = openSync(file, 'w');
  try {
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      writeSync(fd, buf, 0, buf.length, null);
      fsyncSync(fd);
    }
    const ms = performance.now() - t0;
    return {fsyncsPerSecond: (count * 1000) / ms, meanMs: ms / count, count, dir: os.tmpdir()};
  } finally {
    closeSync(fd);
    rmSync(dir, {recursive: true, force: true});
  }
}

/**
 * Collects the manifest. `sql(q)` runs a query on MariaDB (rows), `rabbit` is the server properties
 * of an AMQP connection.
 */
export async function collectManifest({sql, rabbitProps, root, options}) {
  const [[v]] = [await sql('SELECT VERSION() AS v')];
  const vars = {};
  for (const r of await sql(
    "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit','sync_binlog','log_bin','innodb_doublewrite','innodb_flush_method','innodb_buffer_pool_size','innodb_log_file_size','binlog_format')",
  )) {
    vars[r.Variable_name] = r.Value;
  }
  const cpus = os.cpus();
  const srcDirty = git(['status', '--porcelain', '--', 'src'], root);
  return {
    date: new Date().toISOString(),
    // AX_BENCH_COMMIT names the commit when the suite runs on an exported tree (git archive).
    commit: process.env.AX_BENCH_COMMIT ?? git(['rev-parse', '--short', 'HEAD'], root),
    srcUncommittedFiles: process.env.AX_BENCH_COMMIT ? 0 : srcDirty === null ? null : srcDirty.split('\n').filter(Boolean).length,
    node: process.version,
    mariadb: v.v,
    rabbitmq: rabbitProps?.version ? String(rabbitProps.version) : null,
    erlang: rabbitProps?.platform ? String(rabbitProps.platform) : null,
    durability: {
      innodb_flush_log_at_trx_commit: vars.innodb_flush_log_at_trx_commit ?? null,
      sync_binlog: vars.sync_binlog ?? null,
      log_bin: vars.log_bin ?? null,
      innodb_doublewrite: vars.innodb_doublewrite ?? null,
      innodb_flush_method: vars.innodb_flush_method ?? null,
      innodb_buffer_pool_size_mib: vars.innodb_buffer_pool_size ? Number(vars.innodb_buffer_pool_size) / 2 ** 20 : null,
    },
    fsync: fsyncRate(200),
    cores: os.availableParallelism(),
    cpuModel: cpus[0]?.model ?? null,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    hostname: os.hostname(),
    loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
    options,
  };
}
