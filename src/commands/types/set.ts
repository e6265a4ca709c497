import {Args, Flags} from '@oclif/core';
import {AxCommand} from '../../cli/base.js';
import {limitsLine} from '../../cli/types.js';
import type {BreakerSettings} from '../../core/flow/breaker.js';
import type {BreakerInput} from '../../core/flow/settings.js';
import {validateTypeName} from '../../core/task/validate.js';
import {invalid} from '../../core/errors.js';
import {parseKeyWeightFlags, parseMaxRunning, parseRate} from '../../core/flow/limits.js';
import type {TypeLimits, TypeSetInput} from '../../core/types/admin.js';

export interface TypesSetResult {
  type: string;
  /** False: no worker, task or operator had named the type yet; the settings wait for it. */
  known: boolean;
  /** The breaker settings in effect now (defaults where not set). */
  breaker: BreakerSettings;
  /** The cluster-wide limits in effect now (null: none); rate in tasks per second. */
  limits: TypeLimits;
  /** Tasks that waited for a limit this changed, made due now. */
  released: number;
}

export default class TypesSet extends AxCommand {
  static override summary = "Set a task type's cluster-wide limits and circuit-breaker thresholds (the others keep their value).";
  static override description = `The breaker of a type opens when more than --breaker-threshold of its attempts failed over --breaker-window, with at least --breaker-min-volume attempts (defaults: 0.5, 1m, 20). While open its tasks park in storage without using an attempt until the next probe: after --breaker-cooldown (30s), doubled with each opening in a row up to --breaker-max-cooldown (10m). Half-open, --breaker-probes tasks (3) go through, counted across all workers by the claims, and again after each further --breaker-cooldown without an outcome; a failure re-opens it, --breaker-close-after successes (3) close it. Timeouts count as failures, unrecoverable ones (bad payloads) do not. Workers pick changes up within AX_FLOW_REFRESH. Every value is checked before anything is stored. Audited.

--max-running N: never more than N attempts of the type running across all workers; a claim takes only what fits, the rest waits in storage (parked "capped", no attempt used) and is looked at again in waves of N every 250 ms. --rate N/s (or N/m, N/h): at most that many claims of the type per second across all workers, a token bucket in MySQL holding one second of burst; tasks over it wait in storage (parked "rate") until the slot reserved for them. "none" clears a limit; the tasks waiting for a limit that changes are made due at once.

Per task key (tasks submitted with a key, e.g. tenant:42; tasks without one are not counted): --max-running-per-key N never more than N attempts with the same key running across all workers (the rest waits in storage, parked "key-capped"); --rate-per-key N/s a token bucket per key, like --rate (parked "key-rate"). --fair: the type's due keyed tasks are shared across keys — each claim's doorbells are divided among the keys with due tasks, the rest going round-robin to keys below their share — so one key's flood does not hold back the others; --key-weight KEY=W (repeatable, W 1-100, "none" back to 1) gives a key W times the share. --no-fair goes back to first in, first out. Per-key limits and --fair need the index of task keys: ax migrate --task-keys, once per database.

A type no worker has registered yet is accepted (limits and breaker set ahead of a deploy): the output says so. --breaker-off closes an open breaker at once and its parked tasks are due at once.

Exit codes: 2 malformed type name or value, 4 per-key limits or --fair without the index of task keys (ax migrate --task-keys), 5 MySQL unavailable.`;
  static override examples = [
    {
      description: 'A flaky downstream: tolerate more failures',
      command: '<%= config.bin %> types set order_notify --breaker-threshold 0.8 --breaker-min-volume 50',
    },
    {description: 'No breaker for this type', command: '<%= config.bin %> types set report_build --breaker-off'},
    {description: 'Back to the breaker defaults', command: '<%= config.bin %> types set order_notify --defaults'},
    {description: 'At most 20 running at once, cluster-wide', command: '<%= config.bin %> types set partner_sync --max-running 20'},
    {description: 'At most 100 per second, cluster-wide', command: '<%= config.bin %> types set sms_send --rate 100/s'},
    {description: 'No rate limit any more', command: '<%= config.bin %> types set sms_send --rate none'},
    {
      description: 'Tenants share the type fairly, at most 2 running per tenant',
      command: '<%= config.bin %> types set order_notify --fair --max-running-per-key 2',
    },
    {description: 'Tenant 42 gets 3 tasks per turn', command: '<%= config.bin %> types set order_notify --key-weight tenant:42=3'},
  ];
  static override args = {type: Args.string({description: 'task type (domain_action)', required: true, ignoreStdin: true})};
  static override flags = {
    'breaker-threshold': Flags.string({description: 'failure ratio that opens it, between 0 and 1 (default 0.5)'}),
    'breaker-min-volume': Flags.string({description: 'fewest attempts in the window before it may open (default 20)'}),
    'breaker-window': Flags.string({description: 'how far back failures are counted, e.g. 1m (default 1m, at most 10m)'}),
    'breaker-cooldown': Flags.string({description: 'open this long before the first probe, e.g. 30s (doubles per opening in a row)'}),
    'breaker-max-cooldown': Flags.string({description: 'cap of the growing cool-down (default 10m)'}),
    'breaker-probes': Flags.string({description: 'probe tasks while half-open, across all workers, per cool-down (default 3)'}),
    'breaker-close-after': Flags.string({description: 'successful probes that close it (default 3)'}),
    'breaker-off': Flags.boolean({description: 'no breaker for this type', exclusive: ['breaker-on']}),
    'breaker-on': Flags.boolean({description: 'the breaker again (after --breaker-off)'}),
    defaults: Flags.boolean({description: 'drop every breaker override first'}),
    'max-running': Flags.string({description: 'most attempts of the type running at once across all workers (N >= 1, or none)'}),
    rate: Flags.string({description: 'most claims of the type per second across all workers: N/s, N/m, N/h (N > 0), or none'}),
    'max-running-per-key': Flags.string({description: 'most attempts with the same task key running at once (N >= 1, or none)'}),
    'rate-per-key': Flags.string({description: 'most claims per second per task key: N/s, N/m, N/h (N > 0), or none'}),
    fair: Flags.boolean({description: 'claim due keyed tasks round-robin across keys', allowNo: true}),
    'key-weight': Flags.string({
      description: 'KEY=W: the key gets W times the fair share (1-100, or KEY=none); repeatable',
      multiple: true,
    }),
  };

  async run(): Promise<TypesSetResult> {
    const {args, flags} = await this.parse(TypesSet);
    await using admin = this.admin(flags);
    const type = validateTypeName(args.type);
    const b: BreakerInput = {};
    if (flags['breaker-threshold'] !== undefined) b.threshold = flags['breaker-threshold'];
    if (flags['breaker-min-volume'] !== undefined) b.minVolume = flags['breaker-min-volume'];
    if (flags['breaker-window'] !== undefined) b.window = flags['breaker-window'];
    if (flags['breaker-cooldown'] !== undefined) b.cooldown = flags['breaker-cooldown'];
    if (flags['breaker-max-cooldown'] !== undefined) b.maxCooldown = flags['breaker-max-cooldown'];
    if (flags['breaker-probes'] !== undefined) b.probes = flags['breaker-probes'];
    if (flags['breaker-close-after'] !== undefined) b.closeAfter = flags['breaker-close-after'];
    if (flags['breaker-off']) b.enabled = false;
    if (flags['breaker-on']) b.enabled = true;
    const limits: Omit<TypeSetInput, 'breaker' | 'reset'> = {};
    // Checked here too, so a bad value is refused before the database is opened.
    if (flags['max-running'] !== undefined) limits.maxRunning = parseMaxRunning(flags['max-running']);
    if (flags.rate !== undefined) limits.rate = parseRate(flags.rate);
    if (flags['max-running-per-key'] !== undefined)
      limits.maxRunningPerKey = parseMaxRunning(flags['max-running-per-key'], 'max running per key');
    if (flags['rate-per-key'] !== undefined) limits.ratePerKey = parseRate(flags['rate-per-key'], 'rate per key');
    if (flags.fair !== undefined) limits.fair = flags.fair;
    if (flags['key-weight'] !== undefined) limits.keyWeights = parseKeyWeightFlags(flags['key-weight']);
    if (Object.keys(b).length === 0 && Object.keys(limits).length === 0 && !flags.defaults)
      throw invalid(
        'nothing to set: give --max-running, --rate, --max-running-per-key, --rate-per-key, --fair, --key-weight, a --breaker-… flag or --defaults',
      );
    // No RabbitMQ needed: tasks a changed limit releases are due and unpublished, the scheduler rings them.
    const r = await admin.types.set(type, {breaker: b, reset: flags.defaults, ...limits});
    if (!this.jsonEnabled()) {
      if (!r.known) this.log(`${type}: no worker, task or operator has used this type yet; the settings apply when it appears`);
      const x = r.breaker;
      this.log(
        x.enabled
          ? `${type}: breaker opens above ${x.threshold * 100}% failures over ${x.windowMs / 1000} s (at least ${x.minVolume}); cool-down ${x.cooldownMs / 1000} s up to ${x.maxCooldownMs / 1000} s; ${x.probes} probes per cool-down, closes after ${x.closeAfter}`
          : `${type}: no breaker`,
      );
      this.log(`${type}: ${limitsLine(r.limits)}`);
      if (r.released > 0) this.log(`${type}: ${r.released} tasks that waited for the old limits or the breaker are due now`);
    }
    return r;
  }
}
