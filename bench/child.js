// A consumer process for the benchmark: `node bench/child.js <ax-worker|hand-built|bullmq-worker> <json options>`.
// It starts the consumer (see lib/consumers.js), sends {ev: 'ready', pid} and then answers RPCs
// from the parent over IPC: {id, cmd, args} → {id, ok, result | error}. Exits after `stop`.
import {CONSUMERS} from './lib/consumers.js';

const [mode, json] = process.argv.slice(2);
const opts = JSON.parse(json ?? '{}');
const handle = Object.hasOwn(CONSUMERS, mode) ? await CONSUMERS[mode](opts) : null;
if (!handle) {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
process.on('message', async (m) => {
  try {
    const result = await handle[m.cmd](...(m.args ?? []));
    process.send({id: m.id, ok: true, result});
    if (m.cmd === 'stop') process.disconnect();
  } catch (e) {
    process.send({id: m.id, ok: false, error: String(e?.stack ?? e)});
  }
});
// The parent going away (Ctrl-C, crash) ends this process too.
process.on('disconnect', () => setTimeout(() => process.exit(0), 100).unref());
// A SIGTERM from the parent's cleanup exits normally, so that --cpu-prof (bench --profile) writes its profile.
process.on('SIGTERM', () => process.exit(0));
process.send({ev: 'ready', pid: process.pid});
