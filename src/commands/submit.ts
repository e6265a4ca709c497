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

With --stdin every line is one task. With a type argument each line is a payload object; without one each line is a full task spec with the fields type, payload, delay or runAt, pool, priority, maxRetries, timeout, dedupKey, key, debounce or throttle ({"key": …, "window": …}) and id, e.g. {"type": "order_notify", "payload": {"orderId": 1}, "delay": "5s"}. Flags such as --delay, --pool, --priority or --timeout apply to every line that does not set the field. Every line is checked before anything is written: one bad line and nothing is submitted.

Submitting is idempotent: the same --id or --dedup-key with the same type and payload returns the existing task; with different content it is refused (exit 4).

Debounce and throttle, per task type and key, across every producer: --debounce 5s --debounce-key user:7 runs the task 5 s after its submit unless another of the type and key comes before it starts, which replaces it (the earlier one is cancelled, its history naming the replacement); --throttle 1m --throttle-key tenant:3 writes the first task of the type and key and, for a minute, writes no other one: the id printed for those is the kept task's. Windows from 1ms to 24h; neither goes with --dedup-key, nor the two together; --debounce sets the due time, so no --delay or --at with it.

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
      description: 'Debounce: of a burst of edits of document 7, only the last is indexed, 10 s after it',
      command: `<%= config.bin %> submit search_reindex --payload '{"doc": 7}' --debounce 10s --debounce-key doc:7`,
    },
    {
      description: 'Throttle: at most one report per tenant per hour; others within the hour print the kept task',
      command: `<%= config.bin %> submit report_build --payload '{"tenant": 3}' --throttle 1h --throttle-key tenant:3`,
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
      description: "who the task is for, e.g. tenant:42: its type's per-key limits and fair dispatch apply per key (ax types set --help)",
    }),
    debounce: Flags.string({
      description: `debounce window (${DURATION_RULE}; at most 24h): run the task that long after its submit, replaced by a later submit of its type and --debounce-key before it starts`,
      dependsOn: ['debounce-key'],
      exclusive: ['throttle', 'dedup-key', 'delay', 'at'],
    }),
    'debounce-key': Flags.string({description: 'the key --debounce applies to (per task type), e.g. doc:7', dependsOn: ['debounce']}),
    throttle: Flags.string({
      description:
        'throttle window (at most 24h): the first task of its type and --throttle-key is written, no other one with them until the window ends',
      dependsOn: ['throttle-key'],
      exclusive: ['dedup-key'],
    }),
    'throttle-key': Flags.string({description: 'the key --throttle applies to (per task type), e.g. tenant:3', dependsOn: ['throttle']}),
    id: Flags.string({description: 'caller-chosen task id (lower-case UUID), for blind retries'}),
    after: Flags.string({
      multiple: true,
      description: 'wait for this task (an id of this cell) to succeed first; repeatable, at most 100 (docs/workflows.md)',
      exclusive: ['delay', 'at', 'debounce', 'throttle'],
    }),
    'on-parent-failure': Flags.string({
      options: ['cancel', 'run'],
      description: 'when a parent ends dead or cancelled: cancel this task (default) or run it anyway',
      dependsOn: ['after'],
    }),
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
      if (result.throttled)
        this.logToStderr(
          `${result.throttled.length} task(s) throttled (their key's window is open): not written; the id printed is the kept task's`,
        );
      if (result.unpublished > 0)
        this.logToStderr(
          `${result.unpublished} task(s) are stored but not yet rung for (RabbitMQ did not confirm); the reconciler will publish them`,
        );
    }
    return result;
  }
}
