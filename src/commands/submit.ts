import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import type {SubmitReport} from '../core/admin/producer.js';
import {openAdmin} from '../cli/runtime.js';
import {taskSpecsFromInput} from '../cli/task-input.js';
import {POOLS, PRIORITIES} from '../core/task/model.js';
import {maxRetriesFlag} from '../cli/flags.js';
import {DURATION_RULE} from '../core/duration.js';

/** The `--json` output of `ax submit`. */
export type SubmitResult = SubmitReport;

export default class Submit extends AxCommand {
  static override summary = 'Submit one task, or many as NDJSON on stdin.';
  static override description = `The task is validated, written to MySQL (the truth) and, when due, rung for on RabbitMQ. Prints the task ids, one per line.

Task types are domain_action: lower-case words joined by "_", at least two (order_notify). The payload is a JSON object (default {}), at most AX_PAYLOAD_LIMIT bytes (64 KiB).

With --stdin every line is one task. With a type argument each line is a payload object; without one each line is a full task spec with the fields type, payload, delay or runAt, pool, priority, maxRetries, timeout, dedupKey, key and id, e.g. {"type": "order_notify", "payload": {"orderId": 1}, "delay": "5s"}. Flags such as --delay, --pool, --priority or --timeout apply to every line that does not set the field. Every line is checked before anything is written: one bad line and nothing is submitted.

Submitting is idempotent: the same --id or --dedup-key with the same type and payload returns the existing task; with different content it is refused (exit 4).

Each task goes to the cell of its type (AX_CELLS; README "Cells"); --cell only checks that they all belong to that cell.

Exit codes: 2 bad input (also a --cell that is not the types' cell), 4 conflict, 5 MySQL or RabbitMQ unavailable.`;
  static override examples = [
    {description: 'Run a task now', command: `<%= config.bin %> submit order_notify --payload '{"orderId": 42}'`},
    {description: 'Run it in 5 seconds', command: `<%= config.bin %> submit order_notify --payload '{"orderId": 42}' --delay 5s`},
    {
      description: 'At a given time (ISO-8601 with an offset), on the CPU pool',
      command: `<%= config.bin %> submit report_build --at "$(date -d 'tomorrow 02:00' --iso-8601=seconds)" --pool cpu`,
    },
    {
      description: 'Idempotent: a second submit with the same key returns the same task',
      command: `<%= config.bin %> submit user_register_credit --payload-file credit.json --dedup-key user-7:signup`,
    },
    {
      description: 'Many payloads of one type, one JSON object per line',
      command: `cat payloads.ndjson | <%= config.bin %> submit order_notify --stdin --json`,
    },
    {
      description: 'Many full task specs',
      command: `printf '%s\\n' '{"type":"order_notify","payload":{"orderId":1},"delay":"1m"}' | <%= config.bin %> submit --stdin`,
    },
  ];
  static override args = {
    type: Args.string({description: 'task type (domain_action); omit with --stdin to read full task specs', ignoreStdin: true}),
  };
  static override flags = {
    payload: Flags.string({char: 'p', description: 'payload as a JSON object'}),
    'payload-file': Flags.string({description: 'read the payload (a JSON object) from this file'}),
    stdin: Flags.boolean({description: 'read many tasks from stdin, one JSON object per line (NDJSON)'}),
    delay: Flags.string({description: `run after this delay: ${DURATION_RULE}; at most 366d`}),
    at: Flags.string({description: 'run at this ISO-8601 time with an offset (YYYY-MM-DDTHH:MM:SS+08:00, or Z), at most 366 days ahead'}),
    pool: Flags.string({options: [...POOLS], description: 'worker pool (default io)'}),
    priority: Flags.string({
      options: [...PRIORITIES],
      description: "priority level (default normal): a worker serves its pool's levels by weight, high 6 : normal 3 : low 1",
    }),
    'max-retries': maxRetriesFlag({what: 'of the task', defaultText: 'AX_MAX_RETRIES, 5'}),
    timeout: Flags.string({description: `per-attempt timeout: ${DURATION_RULE} (default: the handler's, else 10m)`}),
    'dedup-key': Flags.string({description: 'business key, unique per cell: re-submitting it returns the existing task'}),
    key: Flags.string({
      description: 'who the task is for, e.g. tenant:42: its type\'s per-key limits and fair dispatch apply per key (ax types set --help)',
    }),
    id: Flags.string({description: 'caller-chosen task id (lower-case UUID), for blind retries'}),
  };

  async run(): Promise<SubmitResult> {
    const {args, flags} = await this.parse(Submit);
    const rt = this.runtime(flags);
    // Everything is validated before the first connection, so bad input never writes anything.
    const specs = await taskSpecsFromInput(args.type, flags, rt.config, rt.clock.now());
    // Each task goes to its type's cell; a --cell that names another one is refused.
    await using admin = openAdmin(rt);
    const result = await admin.producer.submit(specs, {pinned: flags.cell !== undefined});
    if (!this.jsonEnabled()) {
      for (const id of result.ids) this.log(id);
      if (result.existing > 0)
        this.logToStderr(
          `${result.existing} task(s) already existed with the same content (idempotent re-submit): nothing new was written for them`,
        );
      if (result.unpublished > 0)
        this.logToStderr(
          `${result.unpublished} task(s) are stored but not yet rung for (RabbitMQ did not confirm); the reconciler will publish them`,
        );
    }
    return result;
  }
}
