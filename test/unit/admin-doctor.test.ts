import {describe, expect, it} from 'vitest';
import {createAdmin} from '../../src/core/admin/service.js';
import {fakeAdmin} from '../helpers/fake-admin.js';

describe('admin doctor', () => {
  it('refuses bad thresholds before opening anything', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    await expect(admin.doctor.check({since: 'soon'})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.doctor.check({late: 'x'})).rejects.toMatchObject({code: 'invalid_input'});
    await expect(admin.doctor.check({since: '2099-01-01T00:00:00Z'})).rejects.toMatchObject({code: 'invalid_input'});
    expect(f.opened).toEqual([]);
  });

  it('servers down are findings with the caller’s hint, not errors; RabbitMQ is opened read-only', async () => {
    const f = fakeAdmin({servers: () => ({})});
    await using admin = createAdmin(f.ctx);
    const {since, report} = await admin.doctor.check({since: '1h'}, {hint: (e) => `hint for ${e.code}`});
    expect(since.toISOString()).toBe('2026-04-30T23:00:00.000Z');
    expect(report.verdict).toBe('unavailable');
    const servers = report.findings.filter((x) => x.symptom === 'services' && x.status === 'problem');
    expect(servers.map((x) => x.id).sort()).toEqual(['mysql', 'rabbitmq']);
    expect(servers.flatMap((x) => [...x.evidence, ...x.next]).join('\n')).toContain('hint for unavailable');
    expect(f.opened).toEqual(['main:store', 'main:broker(declare=false)']);
  });
});
