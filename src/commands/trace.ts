import {Args} from '@oclif/core';
import {AxCommand} from '../cli/base.js';
import {renderTrace, traceJson, type TaskTraceJson} from '../cli/trace-view.js';

export default class Trace extends AxCommand {
  static override readOnly = true;
  static override summary = "Show a task's path through ax as one timeline, with its trace id.";
  static override description = `One timeline of a task from what ax stores: outbox (a task relayed by \`ax relay\`), insert (its submit: when, and who submitted it), publish (its latest doorbell), each claim and attempt (on which worker, with its outcome and error), every other transition (deferrals, retries, cancels, replays), and the archive once the task has been moved there (AX_ARCHIVE_DIR). With the W3C trace context its submit carried (traceparent, tracestate) and the trace id an OpenTelemetry backend files its spans under; "none" for a task submitted outside any trace.

Exit codes: 2 malformed id, 3 unknown id (neither live nor archived), 5 MySQL unavailable.`;
  static override examples = [
    {description: 'Where did this task spend its time?', command: '<%= config.bin %> trace 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d'},
    {description: 'The same, for a script', command: '<%= config.bin %> trace 0190f1c2-7d3e-7a41-9b2c-5e6f7a8b9c0d --json'},
  ];
  static override args = {
    id: Args.string({description: 'task id (a lower-case UUID, as printed by `ax submit`)', required: true, ignoreStdin: true}),
  };

  async run(): Promise<TaskTraceJson> {
    const {args, flags} = await this.parse(Trace);
    await using admin = this.admin(flags);
    const trace = await admin.tasks.trace(args.id);
    if (!this.jsonEnabled()) for (const line of renderTrace(trace)) this.log(line);
    return traceJson(trace);
  }
}
