/// <reference lib="dom" />
/**
 * The console in headless Chromium (Debian's, driven by playwright-core) against a real `ax web`
 * server, MariaDB, RabbitMQ and a worker: sign in, live numbers, search by payload, replay and force
 * replay (refused without a reason, audited with one), pause and resume, a viewer without actions,
 * task text shown as text, and the keyboard on every page. Each page's screenshot is saved
 * (test/helpers/browser.ts; the docs show them).
 */
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import type {Browser, BrowserContext, Page} from 'playwright-core';
import {afterAll, beforeAll, describe, expect, it} from 'vitest';
import {openAdmin} from '../../src/compose.js';
import type {AxStore} from '../../src/core/store/types.js';
import {createIdGenerator} from '../../src/core/task/id.js';
import {validateTaskSpec} from '../../src/core/task/validate.js';
import type {Worker} from '../../src/core/worker/worker.js';
import {focusOrder, launchBrowser, screenshot} from '../helpers/browser.js';
import {createTestEnv, createTestWorker, eventually, type TestEnv} from '../helpers/env.js';
import {call, startTestConsole, type TestConsole} from '../helpers/web.js';

let env: TestEnv;
let store: AxStore;
let c: TestConsole;
let worker: Worker;
let browser: Browser;
let dir: string;
const newId = createIdGenerator(Date.now);

const submit = async (body: unknown): Promise<{id: string; ids?: string[]}> => {
  const r = await call(c, 'POST', '/api/v1/tasks', {token: c.tokens.alice, body});
  expect(r.status).toBe(201);
  return r.body;
};
const stateOf = async (id: string): Promise<string | undefined> => (await store.tasksGet({id}))?.state;

/** A dead task whose last error is `error`, written through the store (as a failed last attempt would). */
async function deadTask(type: string, payload: Record<string, unknown>, error: string): Promise<string> {
  const t = validateTaskSpec({type, payload}, {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'}, Date.now(), newId);
  await store.tasksInsert({tasks: [t], actor: 'it:1'});
  const [claimed] = (await store.tasksClaim({ids: [t.id], worker: 'w:1', leaseMs: 30_000})).claimed;
  await store.outcomesApply({outcomes: [{kind: 'deadLetter', id: t.id, fence: claimed!.fence, error}], actor: 'w:1'});
  return t.id;
}

async function signIn(ctx: BrowserContext, token: string): Promise<Page> {
  const page = await ctx.newPage();
  await page.goto(c.url + '/');
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', {name: 'Sign in'}).click();
  await page.getByRole('heading', {level: 1, name: 'Overview'}).waitFor();
  return page;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ax-console-'));
  env = await createTestEnv({retryBaseMs: 100});
  store = await env.store();
  c = await startTestConsole(env, {users: {alice: 'operator', vic: 'viewer'}, assets: true});
  worker = await createTestWorker(env);
  await worker.start();
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await worker?.stop({graceMs: 1000});
  await c?.close();
  await env?.dispose();
  rmSync(dir, {recursive: true, force: true});
});

describe('the console in a browser', () => {
  it('signs in (a wrong token is refused with its message) and the overview numbers move while the worker runs', async () => {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    // No external assets: every request the console makes goes to its own server.
    const elsewhere: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`${c.url}/`)) elsewhere.push(r.url());
    });
    await page.goto(c.url + '/');
    await screenshot(page, 'login');
    await page.getByLabel('Token').fill('axt_wrong');
    await page.getByRole('button', {name: 'Sign in'}).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/not one of AX_WEB_TOKENS/);
    await page.getByLabel('Token').fill(c.tokens.alice as string);
    await page.getByRole('button', {name: 'Sign in'}).click();
    await page.getByRole('heading', {level: 1, name: 'Overview'}).waitFor();
    const succeeded = page.getByTestId('stat-succeeded');
    const before = await succeeded.textContent();
    await submit({tasks: Array.from({length: 25}, (_, i) => ({type: 'test_noop', payload: {i}}))});
    await expect.poll(() => succeeded.textContent(), {timeout: 20_000}).not.toBe(before);
    await screenshot(page, 'overview');
    expect(elsewhere).toEqual([]);
    await ctx.close();
  });

  it('finds a task by a payload field, and opens it from the results', async () => {
    const {id} = await submit({type: 'test_noop', payload: {order: {id: 'o-4711'}}, delay: '1h'});
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    await page.getByRole('link', {name: 'Tasks', exact: true}).click();
    await page.getByLabel('Since').fill('1h');
    await page.getByLabel('Payload field=value').fill('order.id=o-4711');
    await page.getByRole('button', {name: 'Search'}).click();
    const link = page.getByRole('link', {name: id});
    await link.waitFor();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.getByText('Reads every task since Since (no field is indexed).').waitFor();
    await screenshot(page, 'tasks');
    // With the field indexed, the form says so, and the same search (now by the index) finds it.
    await using admin = openAdmin(env.rt);
    await admin.payloadIndexes.add('order.id');
    await page.reload();
    await page.getByText('Indexed: order.id. Other fields read every task since Since.').waitFor();
    await link.waitFor();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await admin.payloadIndexes.remove('order.id');
    await link.click();
    await page.getByRole('heading', {level: 1, name: new RegExp(id)}).waitFor();
    await ctx.close();
  });

  it("shows what a waiting task waits for, its parents and dependents as links, and a batch callback's progress", async () => {
    const {id: parent} = await submit({type: 'test_noop', payload: {}, delay: '1h'});
    const {id: child} = await submit({type: 'test_noop', payload: {}, after: [parent]});
    const b = await call(c, 'POST', '/api/v1/batches', {
      token: c.tokens.alice,
      body: {
        tasks: [
          {type: 'test_noop', payload: {}, delay: '1h'},
          {type: 'test_noop', payload: {}, delay: '1h'},
        ],
        callback: {type: 'test_noop'},
      },
    });
    expect(b.status).toBe(201);
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    await page.goto(`${c.url}/#/tasks/${child}`);
    await page.getByText('(waiting for 1 parent to succeed)').waitFor();
    // Not its run_at of year 9999: it is due when its parent succeeds.
    expect(await page.locator('dt:text-is("Run at") + dd').textContent()).toBe('not due until it stops waiting');
    await screenshot(page, 'task-waiting');
    await page
      .getByRole('table', {name: /^Parents/})
      .getByRole('link', {name: parent})
      .click();
    await page.getByRole('heading', {level: 1, name: new RegExp(parent)}).waitFor();
    await page
      .getByRole('table', {name: /^Dependents/})
      .getByRole('link', {name: child})
      .waitFor();
    expect(await page.getByText(/waiting for/).count()).toBe(0); // the parent itself is only delayed
    // In the list, its run_at is "waiting", not a date.
    await page.goto(`${c.url}/#/tasks?state=submitted&type=test_noop`);
    const row = page.getByRole('row').filter({has: page.getByRole('link', {name: child})});
    await expect
      .poll(async () => (await row.count()) === 1 && (await row.getByRole('cell', {name: 'waiting', exact: true}).count()))
      .toBe(1);
    await page.goto(`${c.url}/#/tasks/${b.body.callbackId}`);
    await page.getByText('(waiting for its batch: 0 of 2 ended)').waitFor();
    // The types page counts both (the dependent and the callback) among the delayed, as waiting.
    await page.goto(`${c.url}/#/types`);
    await expect.poll(() => page.getByRole('row').filter({hasText: 'test_noop'}).textContent()).toContain('(2 waiting)');
    await page.goto(`${c.url}/#/tasks/${b.body.callbackId}`);
    const members = page.getByRole('definition').filter({hasText: 'succeeded,'});
    expect((await members.textContent())?.replace(/\s+/g, ' ')).toBe('0 of 2 (0 succeeded, 0 dead, 0 cancelled)');
    await ctx.close();
  });

  it('replays a dead task, which then succeeds', async () => {
    const flag = join(dir, 'down');
    writeFileSync(flag, '');
    const {id} = await submit({type: 'test_downstream', payload: {flag}, maxRetries: 0});
    await eventually(async () => (await stateOf(id)) === 'dead');
    rmSync(flag);
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    await page.goto(`${c.url}/#/tasks/${id}`);
    await page.getByRole('button', {name: 'Replay', exact: true}).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', {name: 'Replay', exact: true}).click();
    await eventually(async () => (await stateOf(id)) === 'succeeded');
    // The page polls every 5 s; a reload shows the outcome at once.
    await page.reload();
    await expect.poll(() => page.locator('main').textContent()).toMatch(/succeeded/);
    await screenshot(page, 'task');
    await ctx.close();
  });

  it('force replay refuses without a reason, and with one replays a succeeded task and is audited', async () => {
    const {id} = await submit({type: 'test_noop', payload: {n: 1}});
    await eventually(async () => (await stateOf(id)) === 'succeeded');
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    await page.goto(`${c.url}/#/tasks/${id}`);
    await page.getByRole('button', {name: 'Force replay'}).click();
    const dialog = page.getByRole('dialog', {name: 'Force replay'});
    await expect.poll(() => dialog.textContent()).toMatch(/idempotency/i);
    await dialog.getByRole('button', {name: 'Force replay'}).click();
    await expect.poll(() => dialog.textContent()).toMatch(/A reason is required/);
    const auditBefore = (await store.auditList({limit: 1}))[0]?.id ?? 0;
    expect(await stateOf(id)).toBe('succeeded');
    await dialog.getByLabel('Reason').fill('ledger rolled back');
    await dialog.getByRole('button', {name: 'Force replay'}).click();
    const audit = await eventually(async () => {
      const [a] = await store.auditList({limit: 1});
      return a && a.id > auditBefore ? a : undefined;
    });
    expect(audit).toMatchObject({operator: 'web:alice@127.0.0.1', command: 'web replay --force', reason: 'ledger rolled back'});
    await page.getByRole('link', {name: 'Audit'}).click();
    await expect.poll(() => page.locator('main').textContent()).toMatch(/web replay --force/);
    await screenshot(page, 'audit');
    await ctx.close();
  });

  it('pauses and resumes a type', async () => {
    await submit({type: 'test_noop', payload: {}});
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    await page.getByRole('link', {name: 'Types'}).click();
    await page.getByRole('button', {name: 'Pause test_noop'}).click();
    await page.getByRole('dialog').getByLabel('Reason').fill('deploy');
    await page.getByRole('dialog').getByRole('button', {name: 'Pause'}).click();
    await page.getByRole('button', {name: 'Resume test_noop'}).waitFor();
    expect((await call(c, 'GET', '/api/v1/types/test_noop', {token: c.tokens.vic})).body.paused).toMatchObject({reason: 'deploy'});
    await screenshot(page, 'types');
    await page.getByRole('button', {name: 'Resume test_noop'}).click();
    await page.getByRole('dialog').getByRole('button', {name: 'Resume'}).click();
    await page.getByRole('button', {name: 'Pause test_noop'}).waitFor();
    expect((await call(c, 'GET', '/api/v1/types/test_noop', {token: c.tokens.vic})).body.paused).toBeNull();
    await ctx.close();
  });

  it('a viewer sees no action buttons, and the API refuses its actions', async () => {
    const dead = await deadTask('test_noop', {}, 'boom');
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.vic as string);
    await page.getByRole('link', {name: 'Types'}).click();
    await page.getByRole('table', {name: 'Task types'}).waitFor();
    expect(await page.getByRole('button', {name: /^(Pause|Resume|Reset breaker|Limits) /}).count()).toBe(0);
    await page.goto(`${c.url}/#/tasks/${dead}`);
    await page.getByRole('heading', {level: 1, name: new RegExp(dead)}).waitFor();
    for (const name of ['Cancel', 'Replay', 'Force replay']) expect(await page.getByRole('button', {name, exact: true}).count()).toBe(0);
    expect(await page.getByRole('checkbox').count()).toBe(0);
    const refused = await call(c, 'POST', `/api/v1/tasks/${dead}/replay`, {token: c.tokens.vic, body: {}});
    expect(refused.status).toBe(403);
    expect(await stateOf(dead)).toBe('dead');
    await ctx.close();
  });

  it('shows markup from a task as text: no script runs, no element is made', async () => {
    const evil = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';
    const id = await deadTask('test_noop', {note: evil}, `failed: ${evil}`);
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    await page.goto(`${c.url}/#/tasks/${id}`);
    const payload = page.getByLabel('Payload');
    await expect.poll(() => payload.textContent()).toContain('<script>window.__pwned = 1</script>');
    await expect.poll(() => page.locator('main').textContent()).toContain('failed: <script>');
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as {__pwned?: number}).__pwned)).toBeUndefined();
    await page.getByRole('link', {name: 'Dead letters'}).click();
    await expect.poll(() => page.locator('main').textContent()).toContain('<img src=x');
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as {__pwned?: number}).__pwned)).toBeUndefined();
    await screenshot(page, 'dead-letters');
    await ctx.close();
  });

  it("a type's page lists its top task keys as text, and the key that holds most of the backlog", async () => {
    const evil = 'tenant:<img src=x onerror="window.__pwned = 3">';
    const spec = (key: string) =>
      validateTaskSpec(
        {type: 'keys_web', payload: {}, key, delay: '1h'},
        {maxRetries: 0, payloadLimitBytes: 65_536, cell: 'default'},
        Date.now(),
        newId,
      );
    await store.tasksInsert({
      tasks: [...Array.from({length: 110}, () => spec(evil)), ...Array.from({length: 10}, () => spec('tenant:7'))],
      actor: 'it:1',
    });
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.vic as string);
    await page.getByRole('link', {name: 'Types'}).click();
    await page.getByRole('link', {name: 'Keys and history of keys_web'}).click();
    await page.getByRole('heading', {level: 1, name: 'Type keys_web'}).waitFor();
    const keys = page.getByRole('table', {name: 'Top keys'});
    await expect.poll(() => keys.textContent()).toContain(evil);
    expect(await keys.getByRole('row').allTextContents()).toEqual(['KeyBacklogRunning', `${evil}1100`, 'tenant:7100']);
    await expect
      .poll(() => page.getByRole('note', {name: 'Dominant key'}).textContent())
      .toMatch(/holds 92 % of the backlog of 120: the other keys wait behind it/);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as {__pwned?: number}).__pwned)).toBeUndefined();
    await screenshot(page, 'type');
    await ctx.close();
  });

  it('every page works from the keyboard: each stop has a name, and the navigation comes first', async () => {
    const ctx = await browser.newContext();
    const page = await signIn(ctx, c.tokens.alice as string);
    for (const [hash, heading, shot] of [
      ['#/', 'Overview', null],
      ['#/types', 'Types', null],
      ['#/tasks', 'Tasks', null],
      ['#/dlq', 'Dead letters', null],
      ['#/cron', 'Cron', 'cron'],
      ['#/workers', 'Workers', 'workers'],
      ['#/doctor', 'Doctor', 'doctor'],
      ['#/audit', 'Audit', null],
    ] as const) {
      await page.goto(`${c.url}/${hash}`);
      await page.reload();
      await page.getByRole('heading', {level: 1, name: heading}).waitFor();
      if (shot) await screenshot(page, shot);
      const stops = await focusOrder(page);
      const unnamed = stops.filter((s) => s.name === '');
      expect({hash, unnamed}).toEqual({hash, unnamed: []});
      // The skip link, then the main navigation in its order, come before the page's own stops.
      const names = stops.map((s) => s.name);
      const nav = ['Overview', 'Types', 'Tasks', 'Dead letters', 'Cron', 'Workers', 'Doctor', 'Audit'];
      const firstNav = names.indexOf('Overview');
      expect({hash, nav: names.slice(firstNav, firstNav + nav.length)}).toEqual({hash, nav});
    }
    // A dialog takes the focus and Escape gives it back to its opener.
    await page.goto(`${c.url}/#/types`);
    const pause = page.getByRole('button', {name: 'Pause test_noop'});
    await pause.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest('[role="dialog"]')))).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Pause test_noop');
    await ctx.close();
  });
});
